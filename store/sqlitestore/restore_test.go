package sqlitestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestRestoredDatabaseSearch: the database is restored from a backup
// (VACUUM INTO, as the package doc advises) and the newer index file is left
// beside it. New finds that the index does not follow the restored log and
// builds it again before Search can trust it: an entry of the restored
// database whose delete the old index had applied is found, with the
// indexer run by hand and with it running as in production (a Search
// right after New would race its first pass).
func TestRestoredDatabaseSearch(t *testing.T) {
	for _, live := range []bool{false, true} {
		byHand(t)
		dir := t.TempDir()
		path := filepath.Join(dir, "spool.db")
		backup := filepath.Join(dir, "backup.db")
		ns := store.Namespace{Agent: "a"}
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		s := openAt(t, path)
		appendAll(t, s, ns.Key("s"), say("", at, "my parcel is late")...)
		catchUp(t, s)
		if _, err := s.w.Exec(`VACUUM INTO ` + quote(backup)); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(t.Context(), ns.Key("s")); err != nil {
			t.Fatal(err)
		}
		catchUp(t, s) // the index applies the delete
		s.Close()
		// Restore the database; the index (derived data) stays.
		for _, suffix := range []string{"-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		b, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		indexByHand = !live
		s = openAt(t, path)
		if got := searchIDs(t, s, ns, "parcel"); len(got) != 1 {
			t.Errorf("live %v: search after the restore found %v", live, got)
		}
	}
}

// TestSymlinkedDatabase: two Stores on one database file, one opened
// through a symbolic link. SQLite resolves the link (one database, one
// -wal), and so does the Store for the files named after the database:
// one search index (two would each trim the one log to their own mark,
// and the other would miss entries) and one set of turn locks.
func TestSymlinkedDatabase(t *testing.T) {
	byHand(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "spool.db")
	a := openAt(t, real)
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	b := openAt(t, link)
	if a.ix.path != b.ix.path {
		t.Fatalf("one database, two search indexes: %s and %s", a.ix.path, b.ix.path)
	}
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// The turn lock: both Stores "hold" one session's lock at once.
	ua, err := a.Lock(t.Context(), ns.Key("s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ua()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if ub, err := b.Lock(ctx, ns.Key("s1")); err == nil {
		ub()
		t.Error("two Stores on one database file hold one session's turn lock")
	}
	catchUp(t, a)
	catchUp(t, b) // both built (empty), mark 0
	first := say("", at, "my parcel is late", "where is it", "no tracking")
	appendAll(t, b, ns.Key("s1"), first...)                               // log rows 1..3
	catchUp(t, a)                                                         // a's index: mark 3
	appendAll(t, a, ns.Key("s2"), say("", at.Add(time.Hour), "hello")...) // a trims rows 1, 2
	searchIDs(t, a, ns, "parcel")
	searchIDs(t, b, ns, "parcel") // b's index: mark 0, has nothing; log rows 1, 2 gone

}
