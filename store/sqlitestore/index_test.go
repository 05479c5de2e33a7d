package sqlitestore

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// toVersion2 turns s's database into what schema version 2 made of the
// same appends: every searchable entry in entries_fts, no fts_pending, the
// delete trigger of version 1.
func toVersion2(t *testing.T, s *Store) {
	t.Helper()
	tx, err := s.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := s.indexQueued(t.Context(), tx, nil); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`DROP TABLE fts_pending`,
		`DROP TRIGGER entries_fts_delete`,
		`CREATE TRIGGER entries_fts_delete AFTER DELETE ON entries WHEN old.indexed BEGIN
			DELETE FROM entries_fts WHERE rowid = old.eid;
		END`,
		`PRAGMA user_version = 2`,
	} {
		if _, err := tx.Exec(stmt); err != nil {
			t.Fatal(stmt, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// withIndexBatch sets indexBatch to n for the test.
func withIndexBatch(t *testing.T, n int) {
	saved := indexBatch
	t.Cleanup(func() { indexBatch = saved })
	indexBatch = n
}

// say returns a chain of user messages saying texts, the first after parent.
func say(parent string, at time.Time, texts ...string) []transcript.Entry {
	var out []transcript.Entry
	for i, text := range texts {
		e := storetest.NewEntry(parent, at.Add(time.Duration(i)*time.Millisecond), transcript.TypeUserMessage, transcript.UserMessage{Text: text})
		out = append(out, e)
		parent = e.ID
	}
	return out
}

// searchIDs returns the entry ids Search finds for text in ns, checking
// that they are the scan's.
func searchIDs(t *testing.T, s *Store, ns store.Namespace, text string) []string {
	t.Helper()
	got, err := s.Search(t.Context(), ns, store.SearchQuery{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	want, err := store.Search(t.Context(), scanOnly{s}, ns, store.SearchQuery{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Search(%q) = %v, the scan finds %v", text, hitIDs(got), hitIDs(want))
	}
	var ids []string
	for _, h := range got {
		ids = append(ids, h.EntryID)
	}
	return ids
}

// TestIndexQueue follows entries through the queue of the search index:
// queued by their append, found by Search while queued, indexed all at
// once by the append that brings the queue to indexBatch, and taken out
// of the queue and the index alike when their session is deleted.
func TestIndexQueue(t *testing.T) {
	withIndexBatch(t, 5)
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	queued := func() int { return rawCount(t, s, `SELECT count(*) FROM fts_pending`) }
	indexed := func() int {
		return rawCount(t, s, `SELECT count(*) FROM entries_fts WHERE entries_fts MATCH '"parcel"'`)
	}

	first := say("", at, "my parcel is late", "where is the parcel", "no tracking")
	if err := s.AppendBatch(t.Context(), ns.Key("s1"), first); err != nil {
		t.Fatal(err)
	}
	if q, i := queued(), indexed(); q != 3 || i != 0 {
		t.Fatalf("after 3 appended: %d queued, %d indexed; want 3 and 0", q, i)
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 2 {
		t.Fatalf("Search of the queued entries: %v, want 2 hits", ids)
	}
	// An entry with no text to search is not queued.
	end := storetest.NewEntry(first[2].ID, at.Add(time.Second), transcript.TypeTurnEnd, transcript.TurnEnd{DurationMs: 1})
	appendAll(t, s, ns.Key("s1"), end)
	if q := queued(); q != 3 {
		t.Fatalf("a turn end was queued: %d queued", q)
	}
	// The append that brings the queue to 5 indexes all of it.
	more := say(end.ID, at.Add(2*time.Second), "parcel found", "thanks")
	if err := s.AppendBatch(t.Context(), ns.Key("s1"), more); err != nil {
		t.Fatal(err)
	}
	if q, i := queued(), indexed(); q != 0 || i != 3 {
		t.Fatalf("after 5 queued: %d queued, %d indexed; want 0 and 3", q, i)
	}
	other := say("", at.Add(3*time.Second), "a parcel for another session")
	appendAll(t, s, ns.Key("s2"), other...)
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 4 {
		t.Fatalf("Search of indexed and queued entries: %v, want 4 hits", ids)
	}
	// Deleting sessions takes their queue and index rows with them.
	for _, id := range []string{"s1", "s2"} {
		if err := s.Delete(t.Context(), ns.Key(id)); err != nil {
			t.Fatal(err)
		}
	}
	if q, i := queued(), indexed(); q != 0 || i != 0 {
		t.Fatalf("after deleting: %d queued, %d indexed; want none", q, i)
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 0 {
		t.Fatalf("Search after deleting: %v", ids)
	}
}

// TestIndexQueueKeepsCorruptEntries: an entry whose stored body no longer
// parses stays queued when the rest are indexed, so that Search still
// reads it and reports it rather than lose it silently.
func TestIndexQueueKeepsCorruptEntries(t *testing.T) {
	withIndexBatch(t, 3)
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	entries := say("", at, "parcel one", "parcel two", "parcel three")
	appendAll(t, s, ns.Key("s"), entries[:2]...)
	if _, err := s.w.Exec(`UPDATE entries SET body = CAST('{"broken' AS BLOB) WHERE seq = 0`); err != nil {
		t.Fatal(err)
	}
	appendAll(t, s, ns.Key("s"), entries[2])
	if q := rawCount(t, s, `SELECT count(*) FROM fts_pending`); q != 1 {
		t.Fatalf("%d entries queued, want the corrupt one", q)
	}
	if _, err := s.Search(t.Context(), ns, store.SearchQuery{Text: "parcel"}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Search with a corrupt queued entry: %v, want store.ErrCorrupt", err)
	}
}

// TestMigrationQueuesIndex opens a database of schema version 2, whose
// entries are all in entries_fts, and checks that its search, its new
// appends (queued) and its deletes work across the change.
func TestMigrationQueuesIndex(t *testing.T) {
	withIndexBatch(t, 4)
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	old := say("", at, "old parcel", "old letter", "another parcel")
	appendAll(t, s, ns.Key("old"), old...)
	toVersion2(t, s)
	s.Close()

	s = openAt(t, path)
	var version int
	s.w.QueryRow(`PRAGMA user_version`).Scan(&version)
	if version != len(migrations) {
		t.Fatalf("schema version %d after opening, want %d", version, len(migrations))
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 2 {
		t.Fatalf("Search of the migrated entries: %v, want 2 hits", ids)
	}
	appendAll(t, s, ns.Key("old"), say(old[2].ID, at.Add(time.Second), "new parcel")...)
	appendAll(t, s, ns.Key("new"), say("", at.Add(2*time.Second), "parcel in a new session")...)
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 4 {
		t.Fatalf("Search after appending: %v, want 4 hits", ids)
	}
	if err := s.Delete(t.Context(), ns.Key("old")); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 1 {
		t.Fatalf("Search after deleting: %v, want 1 hit", ids)
	}
	if n := rawCount(t, s, `SELECT count(*) FROM entries_fts WHERE entries_fts MATCH '"parcel"'`) + rawCount(t, s, `SELECT count(*) FROM fts_pending`); n != 1 {
		t.Fatalf("%d index and queue rows left, want the new session's 1", n)
	}
}

// TestSearchPlanMerges: a search through the index merges the index's
// matches with the queued entries as both come, in row id order, and
// never sorts the matches (which would read every match of a common word
// before the first hit).
func TestSearchPlanMerges(t *testing.T) {
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	for _, session := range []string{"", "s"} {
		q, args := searchSQL(ns, session, `"parcel"`, 0)
		rows, err := s.r.Query(`EXPLAIN QUERY PLAN `+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "\n")
		if !strings.Contains(joined, "MERGE (UNION ALL)") || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("session %q: the plan sorts, or does not merge:\n%s", session, joined)
		}
	}
}
