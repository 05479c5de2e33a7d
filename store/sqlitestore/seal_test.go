package sqlitestore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestConformanceSealed(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, WithProtector(testProtector{key: 0x5a}))
	})
}

func TestSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path, WithProtector(testProtector{key: 0x5a}))
	key := store.Key{Agent: "a", Owner: "u", ID: "secret"}
	const secret = "my passport number is XK4471"
	user := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: secret})
	answer := storetest.NewEntry(user.ID, time.Now(), transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "noted: passport XK4471"})
	appendAll(t, s, key, user, answer)

	info, err := s.Stat(t.Context(), key)
	if err != nil || info.Title != secret {
		t.Fatalf("Stat = %+v, %v; want the title %q", info, err, secret)
	}
	hits, err := s.Search(t.Context(), key.Namespace(), store.SearchQuery{Text: "xk4471 PASSPORT"})
	if err != nil || len(hits) != 2 || hits[0].EntryID != answer.ID {
		t.Fatalf("Search of a sealed store: %+v, %v; want both entries by the scan", hits, err)
	}
	if n := rawCount(t, s, `SELECT count(*) FROM fts_log`); n != 0 {
		t.Fatalf("a sealed store logged %d entries for a search index", n)
	}
	if _, err := os.Stat(indexPath(path)); !os.IsNotExist(err) {
		t.Fatalf("a sealed store has a search index file: %v", err)
	}

	// Nowhere in the files: not in bodies, titles or the index.
	s.Close()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("XK4471")) || bytes.Contains(b, []byte("passport")) {
			t.Fatalf("%s holds the plain text", path+suffix)
		}
	}
}

func TestSealedRowsStayInPlace(t *testing.T) {
	s := openTest(t, WithProtector(testProtector{key: 0x5a}))
	a := store.Key{Agent: "a", Owner: "u", ID: "a"}
	b := store.Key{Agent: "a", Owner: "v", ID: "a"}
	seed(t, s, a, time.Now(), 4)
	seed(t, s, b, time.Now(), 4)

	// A sealed entry moved to another session does not open there.
	if _, err := s.w.Exec(`UPDATE entries SET body = (SELECT e.body FROM entries e JOIN sessions s USING (sid) WHERE s.owner = 'u' AND e.seq = 0)
		WHERE seq = 0 AND sid = (SELECT sid FROM sessions WHERE owner = 'v')`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(t.Context(), b)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key != b || ce.Position != 0 || !errors.Is(err, seal.ErrTampered) {
		t.Fatalf("Read of a session holding another's sealed entry: %v; want a CorruptError at entry 0 wrapping seal.ErrTampered", err)
	}
	// Nor one moved within its session.
	if _, err := s.w.Exec(`UPDATE entries SET seq = seq + 10 WHERE seq IN (1, 2) AND sid = (SELECT sid FROM sessions WHERE owner = 'u')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE entries SET seq = 13 - seq WHERE seq IN (11, 12) AND sid = (SELECT sid FROM sessions WHERE owner = 'u')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(t.Context(), a); !errors.As(err, &ce) || ce.Position != 1 || !errors.Is(err, seal.ErrTampered) {
		t.Fatalf("Read of a session whose sealed entries 1 and 2 swapped places: %v; want a CorruptError at entry 1", err)
	}
}

func TestSealedWrongKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path, WithProtector(testProtector{key: 0x5a}))
	key := store.Key{Agent: "a", ID: "s"}
	seed(t, s, key, time.Now(), 2)
	s.Close()

	// Open refuses another key before anything is read or written.
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(t.Context(), path, WithProtector(testProtector{key: 0x11})); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("New with another key: %v; want seal.ErrWrongKey", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("New with another key changed the database")
	}
}
