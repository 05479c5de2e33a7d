//go:build js && wasm

package idbstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

// DatabaseName is the IndexedDB database of the URL "idb:", the name to
// give New unless an application keeps stores apart.
const DatabaseName = "spool-sessions"

func init() {
	store.Register("idb", func(ctx context.Context, u *url.URL) (store.Store, error) {
		return openURL(ctx, u)
	})
}

// Open opens the store a URL names: "idb:" (the database DatabaseName)
// or "idb:NAME", with the optional query parameters max_sessions (a
// number, 0 for no limit) and max_age (a Go duration such as 720h, 0 for
// no limit) for the retention (see WithRetention). opts apply after the
// URL's. An unknown parameter is an error.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	u, err := storekit.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("idbstore: bad idb URL: %w", err)
	}
	if !strings.EqualFold(u.Scheme, "idb") {
		return nil, fmt.Errorf("idbstore: scheme %q is not idb", u.Scheme)
	}
	return openURL(ctx, u, opts...)
}

func openURL(ctx context.Context, u *url.URL, opts ...Option) (*Store, error) {
	if u.Host != "" || u.Path != "" {
		return nil, errors.New("idbstore: use idb: or idb:NAME (no slashes)")
	}
	name := u.Opaque
	if name == "" {
		name = DatabaseName
	}
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
	return New(ctx, name, append([]Option{WithRetention(r)}, opts...)...)
}

// Store keeps sessions in an IndexedDB database. It is safe for concurrent
// use by the goroutines of one page or worker; several pages of the origin
// may use the same database at once.
type Store struct {
	cfg config

	mu  sync.Mutex
	cur *conn // the connection, nil after Close until the next call

	locks storekit.LocalLocks
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

// An Option configures a Store. New and Open fail with the error of the
// first option that refuses its argument.
type Option func(*config) error

// WithRetention sets which sessions of each agent and owner the store
// keeps; it is applied when a new session is created. The default is
// store.DefaultRetention (the newest 50, none idle over 90 days);
// store.Retention{} keeps everything.
func WithRetention(r store.Retention) Option {
	return func(c *config) error {
		c.retention = r
		return nil
	}
}

// WithClock sets the clock that retention measures idleness against
// (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now != nil {
			c.now = now
		}
		return nil
	}
}

// WithRelaxedDurability lets the browser report a write done once the
// operating system has it, before it is flushed to disk: appends are
// several times faster, and a power loss or OS crash (not a closed tab or
// a crashed browser) may lose the newest ones, never a part of one. By
// default every write is flushed before Append returns.
func WithRelaxedDurability() Option {
	return func(c *config) error {
		c.durability = "relaxed"
		return nil
	}
}

// withoutWebLocks makes Lock use the in-page lock even where the Web
// Locks API exists; tests use it to exercise that path.
func withoutWebLocks() Option {
	return func(c *config) error {
		c.webLocks = false
		return nil
	}
}

// New returns the store of the IndexedDB database name (DatabaseName
// unless an application keeps stores apart: stores of different names
// share nothing), creating or upgrading the database as needed. It fails
// when IndexedDB is missing or refused (some private modes), or when a
// newer idbstore has upgraded the database.
func New(ctx context.Context, name string, opts ...Option) (*Store, error) {
	cfg := config{
		name:       name,
		retention:  store.DefaultRetention,
		now:        time.Now,
		durability: "strict",
		webLocks:   true,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
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
