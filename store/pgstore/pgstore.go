package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) {
		return Open(ctx, u.String())
	}
	store.Register("postgres", open)
	store.Register("postgresql", open)
}

// Store keeps transcripts in PostgreSQL (or a database that speaks its wire
// protocol). It is safe for concurrent use, by any number of goroutines and
// of processes sharing the database.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	schema   string // the schema's name
	schemaQ  string // the schema's name, quoted for SQL
	ttl      time.Duration
	now      func() time.Time

	lockConns int32
	lockMu    sync.Mutex
	locks     *locker // made on the first Lock; see lock.go
	closed    bool

	notify notifier // LISTEN/NOTIFY; see notify.go
}

// An Option configures a Store. New and Open fail with the error of the
// first option that refuses its argument.
type Option func(*config) error

type config struct {
	schema    string
	ttl       time.Duration
	now       func() time.Time
	lockConns int32
}

// WithSchema keeps the store's tables in the named schema, created when
// missing. Without it the store uses the first schema of the connection's
// search_path (usually public). The URL parameter schema= does the same.
func WithSchema(name string) Option {
	return func(o *config) error {
		if name == "" || len(name) > 63 || strings.ContainsRune(name, 0) {
			return fmt.Errorf("pgstore: schema name %q: want 1 to 63 bytes, no NUL", name)
		}
		o.schema = name
		return nil
	}
}

// WithTTL expires sessions idle longer than d (measured from their last
// activity, the newest entry's timestamp, to the store's clock). An expired
// session with no approval pending is hidden from every read at once and
// deleted by the next sweep (see Store.Sweep); its id starts empty. One with
// an approval pending is kept and stays readable, so that the runtime can
// report store.ErrSessionExpired for it. Zero, the default, keeps sessions
// until they are deleted. The URL parameter ttl= (a Go duration, as "24h")
// does the same.
func WithTTL(d time.Duration) Option {
	return func(o *config) error {
		if d < 0 {
			return fmt.Errorf("pgstore: negative TTL %v", d)
		}
		o.ttl = d
		return nil
	}
}

// WithClock sets the clock TTL expiry is measured against; tests use it.
// The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *config) error {
		if now == nil {
			return errors.New("pgstore: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithLockConns sets how many database connections session locks may use
// at once (default 16, at least 1), in a pool of their own, so that a turn
// holding a lock never waits for a connection to write its entries. Two of
// them hold the locks of every session that nobody else held when it was
// locked; each of the others waits in the server's queue for a lock
// another process holds, and then holds that one (see Store.Lock). The
// URL parameter lock_conns= does the same.
func WithLockConns(n int) Option {
	return func(o *config) error {
		if n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("pgstore: lock connections %d: want at least 1", n)
		}
		o.lockConns = int32(n)
		return nil
	}
}

// Open connects to the database at rawURL (postgres://… or postgresql://…,
// in the form pgx accepts, including pool_max_conns and other pgxpool
// parameters), brings its schema up to date and returns the store. Three
// query parameters are the store's own and are not sent to the server:
// schema (see WithSchema), ttl (see WithTTL) and lock_conns (see
// WithLockConns); opts given here override them. Close closes the pool.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	connString, urlOpts, err := splitURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's message quotes the URL, and its redaction of a password
		// is best effort: keep the URL out, and only say what was wrong.
		msg := "pgstore: cannot parse the connection URL"
		if inner := errors.Unwrap(err); inner != nil {
			msg += ": " + inner.Error()
		}
		return nil, errors.New(msg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s, err := New(ctx, pool, append(urlOpts, opts...)...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// splitURL takes the store's own parameters out of rawURL.
func splitURL(rawURL string) (string, []Option, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, errors.New("pgstore: want a URL postgres://user@host:port/database?…")
	}
	q := u.Query()
	if name, n := storekit.Repeated(q, "schema", "ttl", "lock_conns"); n > 1 {
		return "", nil, fmt.Errorf("pgstore: URL parameter %s given %d times", name, n)
	}
	var opts []Option
	if v := q.Get("schema"); q.Has("schema") {
		opts = append(opts, WithSchema(v))
	}
	if v := q.Get("ttl"); q.Has("ttl") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", nil, fmt.Errorf("pgstore: URL parameter ttl=%q: %v", v, err)
		}
		opts = append(opts, WithTTL(d))
	}
	if v := q.Get("lock_conns"); q.Has("lock_conns") {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			return "", nil, fmt.Errorf("pgstore: URL parameter lock_conns=%q: not a number", v)
		}
		opts = append(opts, WithLockConns(n))
	}
	q.Del("schema")
	q.Del("ttl")
	q.Del("lock_conns")
	u.RawQuery = q.Encode()
	return u.String(), opts, nil
}

// New returns a store on pool, after bringing the schema up to date (see
// the package doc on migrations). Close leaves pool open: it is the
// caller's.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	o := config{now: time.Now, lockConns: 16}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.schema == "" {
		var cur *string
		if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&cur); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
		if cur == nil {
			return nil, errors.New("pgstore: no schema of the search_path exists; name one with the schema= URL parameter or WithSchema")
		}
		o.schema = *cur
	}
	s := &Store{
		pool:      pool,
		schema:    o.schema,
		schemaQ:   pgx.Identifier{o.schema}.Sanitize(),
		ttl:       o.ttl,
		now:       o.now,
		lockConns: o.lockConns,
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Pool returns the connection pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the name of the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

// TTL returns the idle time after which sessions expire, or zero when they
// never do.
func (s *Store) TTL() time.Duration { return s.ttl }

// Close releases the store's connections: the pool of session locks, and
// the main pool when Open made it. Release every held lock first: Close
// drops the locks held on the two shared connections, ends every Lock
// still waiting (it fails, the store closed), and waits for a lock held
// on a connection of its own (taken after a wait) to be released.
func (s *Store) Close() error {
	s.notify.closeNotify()
	s.lockMu.Lock()
	lk := s.locks
	s.locks, s.closed = nil, true
	s.lockMu.Unlock()
	if lk != nil {
		lk.close()
	}
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// sql puts the quoted schema name into a query written with {s}.
func (s *Store) sql(q string) string { return strings.ReplaceAll(q, "{s}", s.schemaQ) }

// cutoff returns the oldest last activity (unix ns) that is not expired by
// TTL as of now; with no TTL, every time is at or after it.
func (s *Store) cutoff() int64 {
	if s.ttl <= 0 {
		return math.MinInt64
	}
	return nanos(s.now().Add(-s.ttl))
}

// visible is the SQL condition, on a sessions row aliased as alias, that
// TTL has not hidden it; $n is the cutoff.
func visible(alias string, n int) string {
	return fmt.Sprintf("(%[1]s.last_ns >= $%[2]d OR %[1]s.pending > 0)", alias, n)
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos returns t in unix nanoseconds, clamped to what an int64 holds
// (years 1678 to 2262). Entries keep their timestamps exactly either way;
// only the SessionInfo times of sessions outside that range are clamped.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// retryable reports a transaction that a distributed database (CockroachDB,
// YugabyteDB) aborted for a conflict and asks the client to retry; every
// statement the store retries changes nothing when it fails.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// retry runs f until it succeeds, fails for good, or ctx is done.
func retry(ctx context.Context, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || !retryable(err) || attempt == 9 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(1<<attempt) * time.Millisecond):
		}
	}
}

// dbError names the store in an error from the database.
func dbError(op string, key fmt.Stringer, err error) error {
	if err == nil {
		return nil
	}
	if key == nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return fmt.Errorf("pgstore: %s %s: %w", op, key, err)
}

// The capabilities the runtime and the package functions of store find by
// type assertion; a renamed or mistyped method fails the build here
// instead of silently losing the capability.
var (
	_ store.Store           = (*Store)(nil)
	_ store.BatchAppender   = (*Store)(nil)
	_ store.BulkAppender    = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.Searcher        = (*Store)(nil)
	_ store.Locker          = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
	_ store.Expiring        = (*Store)(nil)
)
