package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	key := store.Key{Agent: "a", ID: "s"}
	for _, tc := range []struct {
		url  string
		path string
	}{
		{"sqlite:" + filepath.Join(dir, "abs.db"), filepath.Join(dir, "abs.db")},
		{"sqlite://" + filepath.Join(dir, "slashes.db"), filepath.Join(dir, "slashes.db")},
		{"sqlite:" + filepath.Join(dir, "with%20space%3F.db"), filepath.Join(dir, "with space?.db")},
		{"sqlite:" + filepath.Join(dir, "sub", "dir", "ttl.db") + "?ttl=720h", filepath.Join(dir, "sub", "dir", "ttl.db")},
	} {
		s, err := store.Open(t.Context(), tc.url)
		if err != nil {
			t.Fatalf("store.Open(%q): %v", tc.url, err)
		}
		seedAny(t, s, key)
		if got := s.(*Store).Path(); got != tc.path {
			t.Errorf("store.Open(%q) opened %s, want %s", tc.url, got, tc.path)
		}
		if err := store.Close(s); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(tc.path); err != nil {
			t.Errorf("store.Open(%q): %v", tc.url, err)
		}
	}

	t.Chdir(dir)
	s, err := store.Open(t.Context(), "sqlite:rel/relative.db")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	if want := filepath.Join(dir, "rel", "relative.db"); s.(*Store).Path() != want {
		t.Errorf("sqlite:rel/relative.db opened %s, want %s", s.(*Store).Path(), want)
	}

	for _, bad := range []string{"sqlite:", "sqlite://host/x.db", "sqlite:x.db?ttl=soon", "sqlite:x.db?journal=off", "sqlite:x.db?ttl=720h&ttl=1s"} {
		if s, err := store.Open(t.Context(), bad); err == nil {
			store.Close(s)
			t.Errorf("store.Open(%q) succeeded", bad)
		}
	}
}

func seedAny(t *testing.T, s store.Store, key store.Key) {
	t.Helper()
	if err := s.Append(t.Context(), key, newEntryGen(1).entry("", 0, time.Now(), false)); err != nil {
		t.Fatal(err)
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "folder")
	s := openAt(t, filepath.Join(dir, "spool.db"))
	seed(t, s, store.Key{Agent: "a", ID: "s"}, time.Now(), 3)
	if err := s.ix.catchUp(t.Context()); err != nil { // the index's log and shared memory exist
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir:                                       0o700 | os.ModeDir,
		filepath.Dir(dir):                         0o700 | os.ModeDir,
		filepath.Join(dir, "spool.db"):            0o600,
		filepath.Join(dir, "spool.db-wal"):        0o600,
		filepath.Join(dir, "spool.db-shm"):        0o600,
		filepath.Join(dir, "spool.db-search"):     0o600,
		filepath.Join(dir, "spool.db-search-wal"): 0o600,
		filepath.Join(dir, "spool.db-search-shm"): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

func TestPragmas(t *testing.T) {
	s := openTest(t)
	for i, db := range []*sql.DB{s.w.DB, s.r} {
		var mode string
		var sync, fk, busy int
		if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		wantBusy := 10000
		if i == 0 {
			wantBusy = 0 // the write connection waits in Go (busy.go)
		}
		if mode != "wal" || sync != 2 || fk != 1 || busy != wantBusy {
			t.Errorf("journal_mode %s, synchronous %d, foreign_keys %d, busy_timeout %d; want wal, 2 (FULL), 1, %d", mode, sync, fk, busy, wantBusy)
		}
	}
	if _, err := s.r.Exec(`DELETE FROM sessions`); err == nil {
		t.Error("the read connections accept writes")
	}
}

func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path)
	var version, appID int
	s.w.QueryRow(`PRAGMA user_version`).Scan(&version)
	s.w.QueryRow(`PRAGMA application_id`).Scan(&appID)
	if version != len(migrations) || appID != applicationID {
		t.Fatalf("a new database has schema version %d and application id %#x, want %d and %#x", version, appID, len(migrations), applicationID)
	}
	key := store.Key{Agent: "a", ID: "s"}
	want := seed(t, s, key, time.Now(), 5)
	s.Close()

	// Re-opening an existing database keeps everything and migrates nothing.
	s = openAt(t, path)
	got, err := s.Read(t.Context(), key)
	if err != nil || !sameEntries(got, want) {
		t.Fatalf("after re-opening, Read = %d entries, %v; want the %d appended", len(got), err, len(want))
	}
	s.w.QueryRow(`PRAGMA user_version`).Scan(&version)
	if version != len(migrations) {
		t.Fatalf("re-opening changed the schema version to %d", version)
	}

	// A database from a newer program is refused, untouched.
	if _, err := s.w.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = New(t.Context(), path)
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), path) {
		t.Fatalf("New of a schema version 99 database: %v; want ErrSchemaTooNew naming the file and the version", err)
	}
}

func TestMigrationStepsAreWhole(t *testing.T) {
	// Every step applies in one transaction: a failing step leaves the
	// database at the version before it.
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path)
	s.Close()
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(append([][]string(nil), saved...), []string{
		`CREATE TABLE extra (x INTEGER)`,
		`THIS IS NOT SQL`,
	})
	if _, err := New(t.Context(), path); err == nil {
		t.Fatal("a failing migration step did not fail New")
	}
	migrations = saved
	s = openAt(t, path)
	var version, extra int
	s.w.QueryRow(`PRAGMA user_version`).Scan(&version)
	s.w.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'extra'`).Scan(&extra)
	if version != len(saved) || extra != 0 {
		t.Fatalf("after a failed step: version %d, table of the step present %v; want %d and absent", version, extra == 1, len(saved))
	}
}

func TestRefusesOtherDatabases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := chosenDriver.open("file:"+path, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE sessions (x TEXT); PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := New(t.Context(), path); !errors.Is(err, ErrNotSpool) {
		t.Fatalf("New of another program's database: %v; want ErrNotSpool", err)
	}
}

func TestProtectorMismatch(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.db")
	openAt(t, plain).Close()
	if _, err := New(t.Context(), plain, WithProtector(testProtector{key: 7})); !errors.Is(err, ErrProtectorMismatch) {
		t.Errorf("New with a protector of a database written without: %v; want ErrProtectorMismatch", err)
	}
	sealed := filepath.Join(t.TempDir(), "sealed.db")
	openAt(t, sealed, WithProtector(testProtector{key: 7})).Close()
	if _, err := New(t.Context(), sealed); !errors.Is(err, ErrProtectorMismatch) {
		t.Errorf("New without a protector of a sealed database: %v; want ErrProtectorMismatch", err)
	}
}

func TestOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := New(ctx, filepath.Join(t.TempDir(), "x.db")); !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context: %v", err)
	}
}

func TestCloseTwice(t *testing.T) {
	s := openTest(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Read(t.Context(), store.Key{Agent: "a", ID: "s"}); err == nil {
		t.Fatal("Read after Close succeeded")
	}
}

// TestNewDatabaseOpenedAtOnce: three Stores opening a new database file at
// the same moment (as three processes starting together do; SQLite's locks
// are the same between connections of one process) all succeed, round
// after round.
func TestNewDatabaseOpenedAtOnce(t *testing.T) {
	dir := t.TempDir()
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		path := filepath.Join(dir, fmt.Sprint(round, ".db"))
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				s, err := New(t.Context(), path)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
