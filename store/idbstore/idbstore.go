//go:build js && wasm

package idbstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
)

// DatabaseName is the IndexedDB database a Store uses unless WithName says
// otherwise.
const DatabaseName = "spool-sessions"

func init() {
	store.Register("idb", openURL)
}

// openURL opens "idb:" (the database DatabaseName) or "idb:NAME", with the
// optional query parameters max_sessions (a number, 0 for no limit) and
// max_age (a Go duration such as 720h, 0 for no limit) for the retention.
func openURL(ctx context.Context, u *url.URL) (store.Store, error) {
	if u.Host != "" || u.Path != "" {
		return nil, errors.New("idbstore: use idb: or idb:NAME (no slashes)")
	}
	name := u.Opaque
	if name == "" {
		name = DatabaseName
	}
	opts := []Option{WithName(name)}
	r := store.DefaultRetention
	q := u.Query()
	for k := range q {
		if k != "max_sessions" && k != "max_age" {
			return nil, fmt.Errorf("idbstore: unknown URL parameter %q (known: max_sessions, max_age)", k)
		}
	}
	if v := q.Get("max_sessions"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("idbstore: max_sessions=%q: want a number, 0 for no limit", v)
		}
		r.MaxSessions = n
	}
	if v := q.Get("max_age"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("idbstore: max_age=%q: want a duration such as 720h, 0 for no limit", v)
		}
		r.MaxAge = d
	}
	return Open(ctx, append(opts, WithRetention(r))...)
}

// Store keeps sessions in an IndexedDB database. It is safe for concurrent
// use by the goroutines of one page or worker; several pages of the origin
// may use the same database at once.
type Store struct {
	cfg config

	mu  sync.Mutex
	cur *conn // the connection, nil after Close until the next call

	locks store.LocalLocks
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
	_ store.Locker          = (*Store)(nil)
)

type config struct {
	name       string
	retention  store.Retention
	now        func() time.Time
	durability string
	webLocks   bool
}

// An Option configures a Store.
type Option func(*config)

// WithName sets the IndexedDB database's name (DatabaseName by default).
// Stores of different names share nothing.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithRetention sets which sessions of each agent and owner the store
// keeps; it is applied when a new session is created. The default is
// store.DefaultRetention (the newest 50, none idle over 90 days);
// store.Retention{} keeps everything.
func WithRetention(r store.Retention) Option {
	return func(c *config) { c.retention = r }
}

// WithClock sets the clock that retention measures idleness against
// (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithRelaxedDurability lets the browser report a write done once the
// operating system has it, before it is flushed to disk: appends are
// several times faster, and a power loss or OS crash (not a closed tab or
// a crashed browser) may lose the newest ones, never a part of one. By
// default every write is flushed before Append returns.
func WithRelaxedDurability() Option {
	return func(c *config) { c.durability = "relaxed" }
}

// withoutWebLocks makes Lock use the in-page lock even where the Web
// Locks API exists; tests use it to exercise that path.
func withoutWebLocks() Option {
	return func(c *config) { c.webLocks = false }
}

// Open returns the store of the IndexedDB database DatabaseName (or the one
// WithName names), creating or upgrading the database as needed. It fails
// when IndexedDB is missing or refused (some private modes), or when a
// newer idbstore has upgraded the database.
func Open(ctx context.Context, opts ...Option) (*Store, error) {
	cfg := config{
		name:       DatabaseName,
		retention:  store.DefaultRetention,
		now:        time.Now,
		durability: "strict",
		webLocks:   true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.name == "" {
		return nil, errors.New("idbstore: empty database name")
	}
	s := &Store{cfg: cfg}
	if _, err := s.connect(ctx); err != nil {
		s.Close() // an open still under way closes when it succeeds
		return nil, err
	}
	return s, nil
}

// Name returns the name of the store's IndexedDB database.
func (s *Store) Name() string { return s.cfg.name }

// Close closes the connection to the database. Transactions already
// started finish first. The next call on the store opens the database
// again, so Close never makes the store unusable; a page calls it to let
// another page upgrade or delete the database, or to release it when done.
func (s *Store) Close() error {
	s.mu.Lock()
	c := s.cur
	s.cur = nil
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.ready:
		if c.err == nil {
			s.drop(c)
		}
	default:
		// Still opening: the open's success handler sees that c is no
		// longer current and closes it.
	}
	return nil
}
