package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func init() {
	store.Register("sqlite", func(ctx context.Context, u *url.URL) (store.Store, error) {
		return openURL(ctx, u)
	})
}

// Store keeps transcripts in one SQLite database file. It is safe for
// concurrent use, and several Stores (in one process or several) may share
// one file.
type Store struct {
	w    writeDB // one connection: writes queue here instead of spinning on SQLite's lock (busy.go)
	r    *sql.DB // read-only connections
	path string
	cfg  config

	wc        *writeConn // Append's statements on w's connection (bulk.go)
	readStmts sync.Map   // query → *sql.Stmt, prepared on first use

	ix   *indexer // the search index (index.go); nil under a protector
	rows rowCache // the session rows appends last wrote (rowcache.go)

	closeOnce sync.Once
	closeErr  error

	live notifier // notify_unix.go
}

// Interface checks: the capabilities this store offers.
var (
	_ store.Store           = (*Store)(nil)
	_ store.BatchAppender   = (*Store)(nil)
	_ store.BulkAppender    = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.Searcher        = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
	_ store.Expiring        = (*Store)(nil)
)

// New opens the database at path, creating it (mode 0600, and its folder
// 0700 when missing) and bringing its schema up to date. It deletes the
// sessions expired by a TTL (WithTTL) before returning.
func New(ctx context.Context, path string, opts ...Option) (*Store, error) {
	return open(ctx, path, chosenDriver, opts...)
}

func open(ctx context.Context, path string, drv sqlDriver, opts ...Option) (*Store, error) {
	cfg := defaults()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := prepareFile(path)
	if err != nil {
		return nil, err
	}
	commitWithFdatasync()
	s := &Store{path: abs, cfg: cfg}
	// The write connection waits for locks in Go, not in SQLite (busy.go).
	s.w.timeout = cfg.busyTimeout
	if s.w.DB, err = drv.open(dataSource(abs, 0, false), ""); err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", abs, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetConnMaxIdleTime(0)
	if err := s.init(ctx, drv); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// init brings the database up to date and opens the read connections and
// the search index (a sealed database has none: it would hold the text in
// the clear).
func (s *Store) init(ctx context.Context, drv sqlDriver) error {
	if err := s.initDatabase(ctx); err != nil {
		return err
	}
	// The read connections attach the index once it exists (mode 0600:
	// SQLite never creates it) and has its schema, which this process or
	// another has committed by the time openIndex returns: a connection
	// that attached it before would not see its tables.
	setup := ""
	if s.cfg.protector == nil {
		if err := s.openIndex(ctx, drv); err != nil {
			return err
		}
		setup = "ATTACH " + quote(fileURI(indexPath(s.path))) + " AS idx"
	}
	var err error
	if s.r, err = drv.open(dataSource(s.path, s.cfg.busyTimeout, true), setup); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(s.cfg.readConns)
	s.r.SetMaxIdleConns(s.cfg.readConns)
	if s.ix != nil {
		s.ix.start()
	}
	return nil
}

func (s *Store) initDatabase(ctx context.Context) error {
	mode, err := walMode(ctx, s.w.DB, s.cfg.busyTimeout)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlitestore: %s: cannot use write-ahead logging (journal mode %q)", s.path, mode)
	}
	if err := migrate(ctx, s.w, s.path); err != nil {
		return err
	}
	if err := checkSealed(ctx, s.w, s.path, s.cfg.protector != nil); err != nil {
		return err
	}
	if s.cfg.protector != nil {
		if err := checkKey(ctx, s.w, s.path, s.cfg.protector); err != nil {
			return err
		}
		if err := s.countCompactions(ctx); err != nil {
			return err
		}
	}
	if _, err := s.Sweep(ctx); err != nil {
		return err
	}
	return nil
}

// walMode switches the database to write-ahead logging and returns the
// journal mode it has. Switching a new database takes its exclusive lock,
// and SQLite answers SQLITE_BUSY at once, without waiting, when another
// connection is opening it at the same moment (several processes starting
// on a new file): that is retried as every write is (waitBusy), until the
// busy timeout.
func walMode(ctx context.Context, db *sql.DB, timeout time.Duration) (string, error) {
	var mode string
	err := waitBusy(ctx, timeout, func() error {
		return db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
	})
	return mode, err
}

// isBusy reports whether err is SQLITE_BUSY (any of its extended codes).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// prepareFile creates path's folder (0700) and the file itself (0600) when
// they are missing, so that SQLite, which gives the -wal and -shm files the
// database file's mode, never creates anything more open. Existing folders
// and files keep their modes. It returns the absolute path.
func prepareFile(path string) (string, error) {
	if path == "" {
		return "", errors.New("sqlitestore: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", fmt.Errorf("sqlitestore: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("sqlitestore: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("sqlitestore: %w", err)
	}
	// SQLite opens the file a link names: the files named after the
	// database (the search index, the turn locks, the live socket) must
	// be the same whichever name a Store was given, or two Stores on one
	// database would keep two indexes of one log and two sets of locks.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("sqlitestore: %w", err)
	}
	return abs, nil
}

// dataSource returns the URI both candidate drivers take: the file, the
// per-connection pragmas, and BEGIN IMMEDIATE for every transaction
// database/sql begins (Append begins its own so: bulk.go), so that what a
// transaction checks and what it writes hold the write lock together.
// synchronous=FULL with WAL syncs the log on every commit.
func dataSource(abs string, timeout time.Duration, readOnly bool) string {
	q := []string{
		"_txlock=immediate",
		fmt.Sprintf("_pragma=busy_timeout(%d)", timeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(FULL)",
	}
	if readOnly {
		q = append(q, "_pragma=query_only(1)")
	}
	return fileURI(abs) + "?" + strings.Join(q, "&")
}

// fileURI returns the file: URI of the file at abs.
func fileURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows volume: file:///C:/…
	}
	u := url.URL{Scheme: "file", Path: p}
	return u.String()
}

// quote returns s as an SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. It is safe to call more than once. It ends
// the search indexer's pass in progress (rolled back; the next Store goes
// on from the last committed one), and, called once the Store's other
// operations have returned, it returns with every connection closed: the
// database's files and the index's are then as the last committed
// transactions left them, ready to be copied.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.live.Close()
		var errs []error
		if s.ix != nil {
			errs = append(errs, s.ix.stop())
		}
		s.closeStmts()
		if s.w.DB != nil {
			s.closeWriteConn()
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w.DB != nil {
			errs = append(errs, s.w.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Open opens the database a "sqlite:" URL names, "sqlite:/abs/path.db",
// "sqlite:relative.db" or "sqlite:///abs/path.db", with an optional
// "?ttl=720h" (WithTTL), as store.Open does, and with opts besides (a
// protector, say), applied after the URL's. An unknown URL parameter is an
// error.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	u, err := storekit.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: bad sqlite URL: %w", err)
	}
	return openURL(ctx, u, opts...)
}

func openURL(ctx context.Context, u *url.URL, opts ...Option) (*Store, error) {
	if !strings.EqualFold(u.Scheme, "sqlite") {
		if u.Scheme == "" {
			// The mistake of calling Open with a path: say what to call.
			return nil, errors.New("sqlitestore: Open takes a sqlite: URL (sqlite:/path/spool.db); New(ctx, path) opens a database file")
		}
		return nil, fmt.Errorf("sqlitestore: scheme %q is not sqlite", u.Scheme)
	}
	if u.Host != "" || u.User != nil {
		return nil, fmt.Errorf("sqlitestore: URL names a host %q; use sqlite:/abs/path.db or sqlite:relative.db", u.Host)
	}
	path := u.Path
	if u.Opaque != "" {
		var err error
		if path, err = url.PathUnescape(u.Opaque); err != nil {
			return nil, fmt.Errorf("sqlitestore: bad path in URL: %w", err)
		}
	}
	if path == "" {
		return nil, errors.New("sqlitestore: URL names no file; use sqlite:/abs/path.db or sqlite:relative.db")
	}
	if name, n := storekit.Repeated(u.Query(), "ttl"); n > 1 {
		return nil, fmt.Errorf("sqlitestore: URL parameter %s given %d times", name, n)
	}
	var urlOpts []Option
	for k, v := range u.Query() {
		switch k {
		case "ttl":
			d, err := time.ParseDuration(v[len(v)-1])
			if err != nil || d < 0 {
				return nil, fmt.Errorf("sqlitestore: bad ttl %q in URL (want a duration such as 720h)", v[len(v)-1])
			}
			urlOpts = append(urlOpts, WithTTL(d))
		default:
			return nil, fmt.Errorf("sqlitestore: unknown URL parameter %q (known: ttl)", k)
		}
	}
	return New(ctx, path, append(urlOpts, opts...)...)
}

// cutoff returns the unix-nanosecond instant before which a session with
// no pending approval has expired, as of now; with no TTL, the earliest
// instant, so that nothing expires.
func (s *Store) cutoff() int64 {
	if s.cfg.ttl <= 0 {
		return math.MinInt64
	}
	return s.cfg.now().Add(-s.cfg.ttl).UnixNano()
}

// visible is the SQL condition that a sessions row (alias s) has not
// expired; its one parameter is cutoff().
const visible = `(s.last_activity >= ? OR s.pending > 0)`

// Sweep deletes every session that the TTL has expired (idle longer than
// the TTL, no approval pending) and returns how many it deleted. Open runs
// it, and creating a session sweeps that session's namespace; call it yourself
// to reclaim space sooner. Without a TTL it does nothing.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if s.cfg.ttl <= 0 {
		return 0, nil
	}
	res, err := s.w.exec(ctx, `DELETE FROM sessions WHERE last_activity < ? AND pending = 0`, s.cutoff())
	if err != nil {
		return 0, fmt.Errorf("sqlitestore: %s: sweeping expired sessions: %w", s.path, err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		s.pokeIndex()
	}
	return int(n), nil
}

// sealTitle and openTitle protect a title at rest. A title is bound to its
// session at position -1, a place no entry has.
func (s *Store) sealTitle(k store.Key, title string) (any, error) {
	if title == "" {
		return nil, nil
	}
	if s.cfg.protector == nil {
		return title, nil
	}
	return s.cfg.protector.Seal([]byte(title), seal.AssociatedData(k.Agent, k.Owner, k.ID, -1))
}

func (s *Store) openTitle(k store.Key, raw []byte) (string, error) {
	if len(raw) == 0 || s.cfg.protector == nil {
		return string(raw), nil
	}
	b, err := s.cfg.protector.Open(raw, seal.AssociatedData(k.Agent, k.Owner, k.ID, -1))
	if err != nil {
		return "", &store.CorruptError{Key: k, Position: -1, Where: s.path + ": sessions row, title", Err: err}
	}
	return string(b), nil
}
