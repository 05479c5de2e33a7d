package sqlitestore

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// folderBytes returns every file in dir with its bytes: the database and
// whatever -wal and -shm files it has.
func folderBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func keyringOf(t *testing.T, current seal.Protector, previous ...seal.Protector) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	oldKey = testProtector{key: 0x11}
	newKey = testProtector{key: 0x22}
)

// sealedDB is a database sealed with oldKey holding three sessions, closed.
func sealedDB(t *testing.T) (string, map[store.Key][]transcript.Entry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path, WithProtector(oldKey))
	want := map[store.Key][]transcript.Entry{}
	for i, k := range []store.Key{{Agent: "a", ID: "one"}, {Agent: "a", Owner: "u", ID: "two"}, {Agent: "b", ID: "three"}} {
		want[k] = seed(t, s, k, time.Now().Add(time.Duration(i)*time.Minute), 3+i)
	}
	s.Close()
	return path, want
}

func checkSessions(t *testing.T, s *Store, want map[store.Key][]transcript.Entry) {
	t.Helper()
	for k, entries := range want {
		got, err := s.Read(t.Context(), k)
		if err != nil || !sameEntries(got, entries) {
			t.Fatalf("Read %s: %d entries, %v; want %d", k, len(got), err, len(entries))
		}
		info, err := s.Stat(t.Context(), k)
		if err != nil || info.Title == "" {
			t.Fatalf("Stat %s: %+v, %v", k, info, err)
		}
	}
}

// TestKeyCheckRefusesOpen: a sealed database opened without a protector or
// with another key is refused before anything is written.
func TestKeyCheckRefusesOpen(t *testing.T) {
	path, want := sealedDB(t)
	dir := filepath.Dir(path)
	before := folderBytes(t, dir)
	if _, err := New(t.Context(), path); !errors.Is(err, ErrProtectorMismatch) {
		t.Fatalf("New without a protector: %v", err)
	}
	_, err := New(t.Context(), path, WithProtector(newKey), WithTTL(time.Nanosecond))
	if !errors.Is(err, seal.ErrWrongKey) || !strings.Contains(err.Error(), "encrypted with another key") {
		t.Fatalf("New with another key: %v", err)
	}
	if after := folderBytes(t, dir); !maps.Equal(before, after) {
		t.Fatalf("refused opens changed the files: %d files before, %d after", len(before), len(after))
	}
	checkSessions(t, openAt(t, path, WithProtector(keyringOf(t, newKey, oldKey))), want)

	// A database sealed before key checks existed is checked against an
	// entry, and gets its check from the right key only.
	s := openAt(t, path, WithProtector(oldKey))
	if _, err := s.w.Exec(`DELETE FROM settings WHERE name = 'keycheck'`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := New(t.Context(), path, WithProtector(newKey)); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("New of a database without a key check, with another key: %v", err)
	}
	s = openAt(t, path, WithProtector(oldKey))
	if n := rawCount(t, s, `SELECT count(*) FROM settings WHERE name = 'keycheck'`); n != 1 {
		t.Fatalf("%d key checks after opening with the right key", n)
	}
}

func TestReseal(t *testing.T) {
	path, want := sealedDB(t)
	s := openAt(t, path, WithProtector(keyringOf(t, newKey, oldKey)))
	n := 0
	if err := s.Reseal(t.Context(), newKey, func(_ store.Key, done bool) {
		if done {
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("rewrote %d sessions, want %d", n, len(want))
	}
	s.Close()
	if _, err := New(t.Context(), path, WithProtector(oldKey)); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("the old key still opens the database: %v", err)
	}
	s = openAt(t, path, WithProtector(newKey))
	checkSessions(t, s, want)
	n = 0
	if err := s.Reseal(t.Context(), newKey, func(_ store.Key, done bool) {
		if done {
			n++
		}
	}); err != nil || n != 0 {
		t.Fatalf("second Reseal rewrote %d sessions, %v", n, err)
	}
}

// TestResealResumes: a rotation stopped after one session reads with both
// keys, not with the new one alone, and a second run finishes it.
func TestResealResumes(t *testing.T) {
	path, want := sealedDB(t)
	kr := keyringOf(t, newKey, oldKey)
	s := openAt(t, path, WithProtector(kr))
	refs, err := s.allSessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if done, err := s.resealSession(t.Context(), refs[0].sid, refs[0].key, newKey); err != nil || !done {
		t.Fatal(done, err)
	}
	if _, err := New(t.Context(), path, WithProtector(newKey)); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("the new key alone opened a database still partly under the old one: %v", err)
	}
	checkSessions(t, openAt(t, path, WithProtector(kr)), want)
	n := 0
	if err := s.Reseal(t.Context(), newKey, func(_ store.Key, done bool) {
		if done {
			n++
		}
	}); err != nil || n != len(want)-1 {
		t.Fatalf("the second run rewrote %d sessions (%v), want %d", n, err, len(want)-1)
	}
	checkSessions(t, openAt(t, path, WithProtector(newKey)), want)
}

func TestResealRefuses(t *testing.T) {
	path, _ := sealedDB(t)
	s := openAt(t, path, WithProtector(oldKey))
	if err := s.Reseal(t.Context(), newKey, nil); err == nil || !strings.Contains(err.Error(), "NewKeyring") {
		t.Fatalf("Reseal with the old key only: %v", err)
	}
	if _, err := s.w.Exec(`UPDATE entries SET body = x'00' WHERE seq = 1 AND sid = (SELECT sid FROM sessions WHERE id = 'two')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path, WithProtector(keyringOf(t, newKey, oldKey)))
	err := s.Reseal(t.Context(), newKey, nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key.ID != "two" || ce.Position != 1 {
		t.Fatalf("Reseal over a corrupt entry: %v", err)
	}
}
