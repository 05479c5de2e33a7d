package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) {
		s, err := Open(ctx, u.String())
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	store.Register("redis", open)
	store.Register("rediss", open)
}

// DefaultPrefix is the first part of every key unless WithPrefix says
// otherwise.
const DefaultPrefix = "spool"

// PendingGrace is how long past its TTL a session with an approval pending
// is kept by default (see WithPendingTTL).
const PendingGrace = 30 * 24 * time.Hour

// DefaultLockLease is how long a Locker lock outlives a holder that
// stopped renewing it (a crashed process) unless WithLockLease says
// otherwise.
const DefaultLockLease = 15 * time.Second

// ErrNotDurable is returned by Append, with the store configured to wait
// (WithWait, WithWaitAOF), when the entry was appended but Redis did not
// confirm the copies asked for within the timeout. The entry is in the
// session: appending it again is a conflict.
var ErrNotDurable = errors.New("redisstore: entry appended but not confirmed durable")

// ErrOutcomeUnknown is returned by Append when the append may have been
// sent but neither its reply nor, afterwards, an answer to whether it was
// applied came back (Redis unreachable, a timeout). The entry may or may
// not be in the session, and a copy of the call still in the network may
// yet add it: re-read the session (after the connection is back) to find
// out. The error also wraps the failure itself.
var ErrOutcomeUnknown = errors.New("redisstore: append outcome unknown: the entry may or may not have been appended")

// Store keeps transcripts in Redis. It is safe for concurrent use.
type Store struct {
	c     redis.UniversalClient
	owned bool // Close closes c
	config
	gcSample int
	notify   notifier // pub/sub; see notify.go
}

// config is what the options set.
type config struct {
	prefix          string
	ttl, pendingTTL time.Duration
	lease           time.Duration
	wait            *waitSpec
}

// waitSpec is the WAIT or WAITAOF an append is followed by.
type waitSpec struct {
	aof             bool
	local, replicas int
	timeout         time.Duration
}

// An Option configures a Store. New and Open fail with the error of the
// first option that refuses its argument.
type Option func(*config) error

// WithPrefix sets the first part of every key (default "spool"): stores
// with different prefixes share a database without meeting. The prefix is
// 1-128 of A-Z a-z 0-9 . _ @ - (store.ValidID), so it can never run into
// the rest of a key. URL: ?prefix=P.
func WithPrefix(p string) Option {
	return func(c *config) error {
		if !store.ValidID(p) {
			return fmt.Errorf("redisstore: key prefix %q: use 1-%d of A-Z a-z 0-9 . _ @ -", p, store.MaxIDLength)
		}
		c.prefix = p
		return nil
	}
}

// WithTTL makes sessions expire after d without an append (see the
// package documentation); zero, the default, keeps them until deleted.
// URL: ?ttl=24h.
func WithTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || (d > 0 && d < time.Millisecond) {
			return fmt.Errorf("redisstore: TTL %v: use 0 or at least 1ms", d)
		}
		c.ttl = d
		return nil
	}
}

// WithPendingTTL sets how long a session idles before it expires while an
// approval is pending, when a TTL is set: at least the TTL, or zero to
// keep such a session until it is deleted. The default is the TTL plus
// PendingGrace. URL: ?pendingttl=720h (or 0).
func WithPendingTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || (d > 0 && d < time.Millisecond) {
			return fmt.Errorf("redisstore: pending TTL %v: use 0 or at least 1ms", d)
		}
		c.pendingTTL = d
		return nil
	}
}

// WithLockLease sets how long a Locker lock lasts without renewal; a
// holder renews it every third of that while it holds it. URL:
// ?locklease=15s.
func WithLockLease(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("redisstore: lock lease %v is under 100ms", d)
		}
		c.lease = d
		return nil
	}
}

// WithWait makes Append wait, after writing, until replicas replicas have
// acknowledged the write (WAIT) or timeout passes; when fewer did, Append
// returns ErrNotDurable. URL: ?wait=1&waittimeout=1s.
func WithWait(replicas int, timeout time.Duration) Option {
	return func(c *config) error {
		if replicas < 1 || timeout <= 0 {
			return fmt.Errorf("redisstore: WAIT needs at least 1 replica and a positive timeout")
		}
		c.wait = &waitSpec{replicas: replicas, timeout: timeout}
		return nil
	}
}

// WithWaitAOF makes Append wait, after writing, until the primary (local
// = 1) and replicas replicas have written it to their append-only files
// (WAITAOF, Redis 7.2 and later) or timeout passes; when fewer did, Append
// returns ErrNotDurable. The servers must run with appendonly yes. URL:
// ?waitaof=1&wait=0&waittimeout=1s.
func WithWaitAOF(local, replicas int, timeout time.Duration) Option {
	return func(c *config) error {
		if local < 0 || local > 1 || replicas < 0 || local+replicas == 0 || timeout <= 0 {
			return fmt.Errorf("redisstore: WAITAOF needs local 0 or 1, replicas 0 or more, not both 0, and a positive timeout")
		}
		c.wait = &waitSpec{aof: true, local: local, replicas: replicas, timeout: timeout}
		return nil
	}
}

// New returns a store on client, which may be a single server, a Sentinel
// failover client or a Redis Cluster client. It sends nothing to the
// server (Open checks its connection), and fails only on options it
// refuses or a ctx already done. Close does not close client.
func New(ctx context.Context, client redis.UniversalClient, opts ...Option) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("redisstore: nil client")
	}
	s := &Store{c: client, config: config{prefix: DefaultPrefix, lease: DefaultLockLease, pendingTTL: -1}, gcSample: 3}
	for _, o := range opts {
		if err := o(&s.config); err != nil {
			return nil, err
		}
	}
	switch {
	case s.ttl == 0:
		s.pendingTTL = 0
	case s.pendingTTL < 0:
		s.pendingTTL = s.ttl + PendingGrace
	case s.pendingTTL > 0 && s.pendingTTL < s.ttl:
		return nil, fmt.Errorf("redisstore: pending TTL %v is shorter than the TTL %v", s.pendingTTL, s.ttl)
	}
	if s.wait != nil {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("redisstore: WAIT and WAITAOF need a *redis.Client or *redis.ClusterClient, not %T", client)
		}
	}
	return s, nil
}

// Open connects to the Redis server that rawURL names and returns a store
// on it; Close closes the connection. The URL is go-redis's
// (redis://[user:password@]host:port/db, rediss:// for TLS, and its query
// options) plus the store's own query parameters: prefix, ttl, pendingttl,
// locklease, wait, waitaof and waittimeout (see the Option of each). opts
// apply after the URL's.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	u, err := storekit.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisstore: bad URL: %w", err)
	}
	urlOpts, err := takeOptions(u)
	if err != nil {
		return nil, err
	}
	ropt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redisstore: %s", redactErr(err, u))
	}
	client := redis.NewClient(ropt)
	s, err := New(ctx, client, append(urlOpts, opts...)...)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.owned = true
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redisstore: connecting to %s: %w", ropt.Addr, err)
	}
	return s, nil
}

// takeOptions removes the store's own query parameters from u and returns
// them as options, so that go-redis, which refuses parameters it does not
// know, sees only its own.
func takeOptions(u *url.URL) ([]Option, error) {
	q := u.Query()
	if name, n := storekit.Repeated(q, "prefix", "ttl", "pendingttl", "locklease", "wait", "waitaof", "waittimeout"); n > 1 {
		return nil, fmt.Errorf("redisstore: URL parameter %s given %d times", name, n)
	}
	var opts []Option
	dur := func(name string) (time.Duration, bool, error) {
		v := q.Get(name)
		if !q.Has(name) {
			return 0, false, nil
		}
		q.Del(name)
		if v == "0" {
			return 0, true, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, false, fmt.Errorf("redisstore: URL parameter %s=%q: %v", name, v, err)
		}
		return d, true, nil
	}
	num := func(name string) (int, bool, error) {
		v := q.Get(name)
		if !q.Has(name) {
			return 0, false, nil
		}
		q.Del(name)
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false, fmt.Errorf("redisstore: URL parameter %s=%q: not a number", name, v)
		}
		return n, true, nil
	}
	if q.Has("prefix") {
		opts = append(opts, WithPrefix(q.Get("prefix")))
		q.Del("prefix")
	}
	for _, p := range []struct {
		name string
		opt  func(time.Duration) Option
	}{{"ttl", WithTTL}, {"pendingttl", WithPendingTTL}, {"locklease", WithLockLease}} {
		d, ok, err := dur(p.name)
		if err != nil {
			return nil, err
		}
		if ok {
			opts = append(opts, p.opt(d))
		}
	}
	replicas, hasWait, err := num("wait")
	if err != nil {
		return nil, err
	}
	local, hasAOF, err := num("waitaof")
	if err != nil {
		return nil, err
	}
	timeout, hasTimeout, err := dur("waittimeout")
	if err != nil {
		return nil, err
	}
	if !hasTimeout {
		timeout = time.Second
	}
	switch {
	case hasAOF:
		opts = append(opts, WithWaitAOF(local, replicas, timeout))
	case hasWait:
		opts = append(opts, WithWait(replicas, timeout))
	case hasTimeout:
		return nil, errors.New("redisstore: URL parameter waittimeout without wait or waitaof")
	}
	u.RawQuery = q.Encode()
	return opts, nil
}

// redactErr returns err's message with u's password, if any, blanked out.
func redactErr(err error, u *url.URL) string {
	msg := err.Error()
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	return msg
}

// Close closes the client when Open made it; a store from New leaves its
// client to the caller.
func (s *Store) Close() error {
	s.notify.closeNotify()
	if s.owned {
		return s.c.Close()
	}
	return nil
}

// TTL returns the idle time after which sessions expire, or zero when
// they never do.
func (s *Store) TTL() time.Duration { return s.ttl }

// Prefix returns the first part of the store's keys.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the client the store works on.
func (s *Store) Client() redis.UniversalClient { return s.c }

func (s *Store) keys(ns store.Namespace) nsKeys { return keysFor(s.prefix, ns) }

// Interface checks.
var (
	_ store.Store           = (*Store)(nil)
	_ store.BatchAppender   = (*Store)(nil)
	_ store.BulkAppender    = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
	_ store.Locker          = (*Store)(nil)
	_ store.Expiring        = (*Store)(nil)
)
