package sqlitestore

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// byHand leaves the indexing of the Stores the test opens to the test
// (indexByHand).
func byHand(t *testing.T) {
	saved := indexByHand
	t.Cleanup(func() { indexByHand = saved })
	indexByHand = true
}

// withIndexBatch sets indexBatch to n for the test.
func withIndexBatch(t *testing.T, n int) {
	saved := indexBatch
	t.Cleanup(func() { indexBatch = saved })
	indexBatch = n
}

// withPassRows sets passRows to n for the test.
func withPassRows(t *testing.T, n int) {
	saved := passRows
	t.Cleanup(func() { passRows = saved })
	passRows = n
}

// catchUp runs s's indexer until the index has everything.
func catchUp(t *testing.T, s *Store) {
	t.Helper()
	if err := s.ix.catchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// indexPass runs one pass of s's indexer, of at most rows log rows or
// entries.
func indexPass(t *testing.T, s *Store, rows int) {
	t.Helper()
	saved := passRows
	defer func() { passRows = saved }()
	passRows = rows
	if _, err := s.ix.pass(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// restartIndex empties s's index as a mismatched one is, to be built again.
func restartIndex(t *testing.T, s *Store) {
	t.Helper()
	tx, err := s.ix.db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	st, err := s.ix.restart(t.Context(), tx, s.r)
	if err == nil {
		err = writeState(t.Context(), tx, st)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// indexState returns s's index state row.
func readIndexState(t *testing.T, s *Store) indexState {
	t.Helper()
	var st indexState
	if err := s.ix.db.QueryRow(`SELECT mark, mark_eid, cursor FROM state`).Scan(&st.mark, &st.markEID, &st.cursor); err != nil {
		t.Fatal(err)
	}
	return st
}

// indexed returns the row ids of the index rows matching word, sorted.
func indexed(t *testing.T, s *Store, word string) []int64 {
	t.Helper()
	rows, err := s.ix.db.Query(`SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?`, `"`+word+`"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// holding returns the row ids of the stored entries whose text contains
// word, sorted: what the index must hold for it once caught up.
func holding(t *testing.T, s *Store, word string) []int64 {
	t.Helper()
	rows, err := s.w.Query(`SELECT eid, body FROM entries WHERE indexed ORDER BY eid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		if text, broken := indexText(body); !broken && strings.Contains(text, word) {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
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

// indexStates are the states a search can find the index in, each made
// from a Store whose entries are appended and nothing indexed yet.
var indexStates = []struct {
	name string
	make func(t *testing.T, s *Store)
}{
	{"everything logged", func(*testing.T, *Store) {}},
	{"partly indexed", func(t *testing.T, s *Store) { indexPass(t, s, 7) }},
	{"indexed", catchUp},
	{"not built", func(t *testing.T, s *Store) {
		catchUp(t, s)
		restartIndex(t, s)
	}},
	{"being built", func(t *testing.T, s *Store) {
		catchUp(t, s)
		restartIndex(t, s)
		indexPass(t, s, 7)
	}},
}

// TestIndexFollowsLog follows entries through the search index: logged by
// their append, found by Search while logged, indexed by the indexer, the
// log trimmed behind it by the next append, and taken out of the index
// when their session is deleted.
func TestIndexFollowsLog(t *testing.T) {
	byHand(t)
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	logged := func() int { return rawCount(t, s, `SELECT count(*) FROM fts_log`) }

	first := say("", at, "my parcel is late", "where is the parcel", "no tracking")
	if err := s.AppendBatch(t.Context(), ns.Key("s1"), first); err != nil {
		t.Fatal(err)
	}
	if n, i := logged(), indexed(t, s, "parcel"); n != 3 || len(i) != 0 {
		t.Fatalf("after 3 appended: %d logged, %d indexed; want 3 and 0", n, len(i))
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 2 {
		t.Fatalf("Search of the logged entries: %v, want 2 hits", ids)
	}
	// An entry with no text to search is not logged.
	end := storetest.NewEntry(first[2].ID, at.Add(time.Second), transcript.TypeTurnEnd, transcript.TurnEnd{DurationMs: 1})
	appendAll(t, s, ns.Key("s1"), end)
	if n := logged(); n != 3 {
		t.Fatalf("a turn end was logged: %d logged", n)
	}
	catchUp(t, s)
	if i, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); len(i) != 2 || !slices.Equal(i, want) {
		t.Fatalf("after catching up: index rows %v for parcel, want %v", i, want)
	}
	if st := readIndexState(t, s); st.mark != 3 || st.cursor.Valid {
		t.Fatalf("index state %+v, want built and at log row 3", st)
	}
	// The next append trims the log up to the row at the mark.
	more := say(end.ID, at.Add(2*time.Second), "parcel found", "thanks")
	if err := s.AppendBatch(t.Context(), ns.Key("s1"), more); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, s, `SELECT count(*) FROM fts_log WHERE seq < 3`); n != 0 {
		t.Fatalf("%d log rows below the mark after an append", n)
	}
	if n := logged(); n != 3 {
		t.Fatalf("%d log rows, want the one at the mark and the 2 new", n)
	}
	other := say("", at.Add(3*time.Second), "a parcel for another session")
	appendAll(t, s, ns.Key("s2"), other...)
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 4 {
		t.Fatalf("Search of indexed and logged entries: %v, want 4 hits", ids)
	}
	// Deleting sessions logs the deletes; the indexer takes the rows out.
	for _, id := range []string{"s1", "s2"} {
		if err := s.Delete(t.Context(), ns.Key(id)); err != nil {
			t.Fatal(err)
		}
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 0 {
		t.Fatalf("Search after deleting, before the indexer: %v", ids)
	}
	catchUp(t, s)
	if i := indexed(t, s, "parcel"); len(i) != 0 {
		t.Fatalf("after deleting: index rows %v", i)
	}
	if ids := searchIDs(t, s, ns, "parcel"); len(ids) != 0 {
		t.Fatalf("Search after deleting: %v", ids)
	}
}

// TestIndexRowIDReused: a deleted entry's row id given to a new entry (the
// last of its millisecond deleted, then another stored in it) is indexed
// with the new text, and the old text is gone, whether the indexer saw the
// first entry or not.
func TestIndexRowIDReused(t *testing.T) {
	for _, sawFirst := range []bool{false, true} {
		byHand(t)
		s := openTest(t)
		ns := store.Namespace{Agent: "a"}
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		appendAll(t, s, ns.Key("old"), say("", at, "old parcel")...)
		if sawFirst {
			catchUp(t, s)
		}
		eid := rawCount(t, s, `SELECT eid FROM entries`)
		if err := s.Delete(t.Context(), ns.Key("old")); err != nil {
			t.Fatal(err)
		}
		appendAll(t, s, ns.Key("new"), say("", at, "new letter")...)
		if got := rawCount(t, s, `SELECT eid FROM entries`); got != eid {
			t.Fatalf("the new entry has row id %d, not the deleted one's %d: the test needs it reused", got, eid)
		}
		for _, w := range []string{"parcel", "letter"} {
			searchIDs(t, s, ns, w)
		}
		catchUp(t, s)
		if p, l := indexed(t, s, "parcel"), indexed(t, s, "letter"); len(p) != 0 || len(l) != 1 || l[0] != int64(eid) {
			t.Fatalf("saw first %v: index rows for parcel %v, for letter %v; want none and [%d]", sawFirst, p, l, eid)
		}
		if ids := searchIDs(t, s, ns, "letter"); len(ids) != 1 {
			t.Fatalf("Search: %v", ids)
		}
	}
}

// TestIndexKeepsCorruptEntries: an entry whose stored body no longer
// parses when the indexer reads it is kept as broken, so that Search
// still reads it and reports it rather than lose it silently.
func TestIndexKeepsCorruptEntries(t *testing.T) {
	byHand(t)
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	appendAll(t, s, ns.Key("s"), say("", at, "parcel one", "parcel two", "parcel three")...)
	if _, err := s.w.Exec(`UPDATE entries SET body = CAST('{"broken' AS BLOB) WHERE seq = 0`); err != nil {
		t.Fatal(err)
	}
	catchUp(t, s)
	var broken int
	if err := s.ix.db.QueryRow(`SELECT count(*) FROM broken`).Scan(&broken); err != nil || broken != 1 {
		t.Fatalf("%d entries kept as broken (%v), want the corrupt one", broken, err)
	}
	for _, text := range []string{"parcel", "three"} {
		if _, err := s.Search(t.Context(), ns, store.SearchQuery{Text: text}); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("Search(%q) with a corrupt entry the index could not read: %v, want store.ErrCorrupt", text, err)
		}
	}
	// Deleting it takes it off the list.
	if err := s.Delete(t.Context(), ns.Key("s")); err != nil {
		t.Fatal(err)
	}
	catchUp(t, s)
	if err := s.ix.db.QueryRow(`SELECT count(*) FROM broken`).Scan(&broken); err != nil || broken != 0 {
		t.Fatalf("%d entries kept as broken after deleting (%v), want none", broken, err)
	}
}

// TestIndexRebuilt: an index file deleted, or one that belongs to another
// database (a log whose row at its mark is not the one it recorded), is
// built again from the entries, and Search is exact meanwhile.
func TestIndexRebuilt(t *testing.T) {
	byHand(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "spool.db")
	s := openAt(t, path)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	first := say("", at, "a parcel", "a letter", "the parcel again")
	appendAll(t, s, ns.Key("s"), first...)
	catchUp(t, s)
	appendAll(t, s, ns.Key("s"), say(first[2].ID, at.Add(time.Second), "parcel four", "letter five")...) // trims the log
	catchUp(t, s)
	s.Close()

	check := func(s *Store) {
		t.Helper()
		for _, w := range []string{"parcel", "letter"} {
			searchIDs(t, s, ns, w)
		}
	}
	// Deleted.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(indexPath(path) + suffix)
	}
	s = openAt(t, path)
	if st := readIndexState(t, s); !st.cursor.Valid {
		t.Fatalf("a new index is built: state %+v", st)
	}
	check(s)
	indexPass(t, s, 2)
	check(s)
	catchUp(t, s)
	if st := readIndexState(t, s); st.cursor.Valid {
		t.Fatalf("after catching up: state %+v", st)
	}
	check(s)
	if got, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); len(got) != 3 || !slices.Equal(got, want) {
		t.Fatalf("rebuilt index rows for parcel %v, want %v", got, want)
	}
	s.Close()

	// Another database's index: its mark falls on a row of another entry.
	other := filepath.Join(dir, "other.db")
	o := openAt(t, other)
	for i := range 8 {
		appendAll(t, o, ns.Key("x"+string(rune('a'+i))), say("", at.Add(time.Duration(i)*time.Hour), "unrelated words")...)
	}
	catchUp(t, o)
	o.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(indexPath(path) + suffix)
		if b, err := os.ReadFile(indexPath(other) + suffix); err == nil {
			os.WriteFile(indexPath(path)+suffix, b, 0o600)
		}
	}
	s = openAt(t, path)
	indexPass(t, s, 2) // finds the mismatch
	if st := readIndexState(t, s); !st.cursor.Valid {
		t.Fatalf("a mismatched index is built again: state %+v", st)
	}
	check(s)
	catchUp(t, s)
	check(s)
	if got, want := indexed(t, s, "words"), holding(t, s, "words"); len(got) != 0 || len(want) != 0 {
		t.Fatalf("the other database's index rows survived: %v", got)
	}
	if got, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); !slices.Equal(got, want) {
		t.Fatalf("rebuilt index rows for parcel %v, want %v", got, want)
	}
}

// TestIndexStoresShareFile: two Stores on one file (as two processes
// are) append and index side by side; the index ends with every entry
// once.
func TestIndexStoresShareFile(t *testing.T) {
	withIndexBatch(t, 3)
	path := filepath.Join(t.TempDir(), "spool.db")
	a, b := openAt(t, path), openAt(t, path)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	done := make(chan error, 2)
	for i, s := range []*Store{a, b} {
		go func() {
			var head string
			for j := range 60 {
				e := say(head, at.Add(time.Duration(i*1000+j)*time.Millisecond), "parcel number "+string(rune('a'+i)))[0]
				if err := s.Append(t.Context(), ns.Key(string(rune('a'+i))), e); err != nil {
					done <- err
					return
				}
				head = e.ID
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	searchIDs(t, a, ns, "parcel")
	catchUp(t, a)
	catchUp(t, b)
	searchIDs(t, b, ns, "parcel")
	if got, want := indexed(t, a, "parcel"), holding(t, a, "parcel"); len(got) != 120 || !slices.Equal(got, want) {
		t.Fatalf("index rows for parcel: %d, want the 120 entries once", len(got))
	}
	if err := errors.Join(a.ix.err(), b.ix.err()); err != nil {
		t.Fatal(err)
	}
}

// TestCloseStopsIndexer: Close ends a catch-up in progress, leaving the
// index as its last committed pass left it, which the next Store
// continues, and no connection to it open.
func TestCloseStopsIndexer(t *testing.T) {
	withPassRows(t, 16)
	path := filepath.Join(t.TempDir(), "spool.db")
	byHand(t)
	s := openAt(t, path)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var batches []store.Batch
	for i := range 100 {
		batches = append(batches, store.Batch{Key: ns.Key("s" + string(rune('a'+i%26)) + string(rune('a'+i/26))), Entries: say("", at.Add(time.Duration(i)*time.Second), "parcel", "letter")})
	}
	if err := s.AppendBulk(t.Context(), batches); err != nil {
		t.Fatal(err)
	}
	s.Close()
	indexByHand = false
	s = openAt(t, path) // starts catching up
	time.Sleep(time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.ix.done:
	default:
		t.Fatal("Close returned with the indexer running")
	}
	// Nor with a connection to the index still open: its pass's rollback
	// done later, after which the connection's close writes the index
	// file (a copy taken once Close returned could change under it).
	if n := s.ix.db.Stats().OpenConnections; n != 0 {
		t.Fatalf("Close returned with %d connections to the index open", n)
	}
	indexByHand = true
	s = openAt(t, path)
	catchUp(t, s)
	if got, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); len(got) != 100 || !slices.Equal(got, want) {
		t.Fatalf("index rows for parcel after a Close mid-catch-up: %d, want 100", len(got))
	}
}

// TestIndexCaughtUpInBackground: a Store's indexer indexes on its own
// once its appends have logged indexBatch entries.
func TestIndexCaughtUpInBackground(t *testing.T) {
	withIndexBatch(t, 4)
	s := openTest(t)
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	appendAll(t, s, ns.Key("s"), say("", at, "parcel 1", "parcel 2", "parcel 3", "parcel 4")...)
	for len(indexed(t, s, "parcel")) < 4 { // or the test's timeout
		if err := s.ix.err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIndexWaitsForAPause: a due indexer waits for the Store's appends
// to pause, so that a burst of turns does not share the machine with
// indexing them; it waits no longer once they have logged 4*indexBatch
// rows, nor after a delete, whose text leaves the index at once.
func TestIndexWaitsForAPause(t *testing.T) {
	withIndexBatch(t, 4)
	saved := indexIdle
	t.Cleanup(func() { indexIdle = saved })
	indexIdle = time.Hour // no pause comes
	s := openTest(t)
	<-s.ix.opened
	ns := store.Namespace{Agent: "a"}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	appendAll(t, s, ns.Key("g"), say("", at, "secret")...)
	parcels := say("", at, "parcel 1", "parcel 2", "parcel 3", "parcel 4", "parcel 5", "parcel 6", "parcel 7",
		"parcel 8", "parcel 9", "parcel 10", "parcel 11", "parcel 12", "parcel 13", "parcel 14", "parcel 15", "parcel 16")
	appendAll(t, s, ns.Key("s"), parcels[:3]...) // due: 4 rows logged
	time.Sleep(100 * time.Millisecond)
	if n := len(indexed(t, s, "parcel")) + len(indexed(t, s, "secret")); n != 0 {
		t.Fatalf("%d rows indexed while the appends had not paused", n)
	}
	appendAll(t, s, ns.Key("s"), parcels[3:15]...) // 16 rows: on with it
	waitIndexed := func(word string, n int) {
		t.Helper()
		for len(indexed(t, s, word)) != n { // or the test's timeout
			if err := s.ix.err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitIndexed("parcel", 15)
	waitIndexed("secret", 1)
	appendAll(t, s, ns.Key("s"), parcels[15]) // the appends go on
	if err := s.Delete(t.Context(), ns.Key("g")); err != nil {
		t.Fatal(err)
	}
	waitIndexed("secret", 0)
}

// fixture copies testdata/NAME.db.gz, a database written by an earlier
// version of this package, into the test's folder and returns its path.
func fixture(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spool.db")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, z); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigration opens databases that schema versions 2 and 3 wrote (the
// version 3 one with entries indexed, one queued and a session deleted),
// and checks their search before and after the new index is built, and
// their appends and deletes after.
func TestMigration(t *testing.T) {
	for _, name := range []string{"schema-v2", "schema-v3"} {
		t.Run(name, func(t *testing.T) {
			byHand(t)
			path := fixture(t, name)
			s := openAt(t, path)
			if v := rawCount(t, s, `PRAGMA user_version`); v != len(migrations) {
				t.Fatalf("schema version %d after opening, want %d", v, len(migrations))
			}
			if n := rawCount(t, s, `SELECT count(*) FROM sqlite_schema WHERE name IN ('entries_fts', 'fts_pending')`); n != 0 {
				t.Fatalf("%d of the old index's tables left", n)
			}
			ns, user := store.Namespace{Agent: "a"}, store.Namespace{Agent: "a", Owner: "u"}
			want := map[string]int{"parcel": 4, "letter": 1, "queued": 1, "deleted": 0}
			check := func() {
				t.Helper()
				for w, n := range want {
					if ids := searchIDs(t, s, ns, w); len(ids) != n {
						t.Fatalf("Search(%q): %d hits, want %d", w, len(ids), n)
					}
				}
				if ids := searchIDs(t, s, user, "parcel"); len(ids) != 1 {
					t.Fatalf("Search of the user's namespace: %v", ids)
				}
			}
			check() // while the index is being built: the scan
			catchUp(t, s)
			check()
			if got, want := indexed(t, s, "parcel"), holding(t, s, "parcel"); len(got) != 5 || !slices.Equal(got, want) {
				t.Fatalf("index rows for parcel %v, want %v", got, want)
			}
			tail, _, err := s.ReadTail(t.Context(), ns.Key("old"), 1)
			if err != nil || len(tail) != 1 {
				t.Fatalf("ReadTail: %v, %v", tail, err)
			}
			appendAll(t, s, ns.Key("old"), say(tail[0].ID, time.Now(), "new parcel")...)
			want["parcel"]++
			check()
			if err := s.Delete(t.Context(), ns.Key("old")); err != nil {
				t.Fatal(err)
			}
			want = map[string]int{"parcel": 0, "letter": 0, "queued": 0}
			check()
			catchUp(t, s)
			check()
			if got := indexed(t, s, "parcel"); len(got) != 1 {
				t.Fatalf("index rows for parcel after deleting: %v, want the user's 1", got)
			}
		})
	}
}

// TestSearchPlanMerges: a search through the index merges the index's
// matches with the entries it does not have yet as both come, in row id
// order, and never sorts the matches (which would read every match of a
// common word before the first hit), nor reads every entry to find the
// ones a build has not reached.
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
		// The entries past the build's cursor are a range of row ids
		// (empty once built), not a scan of every entry.
		if strings.Contains(joined, "SCAN e") || !strings.Contains(joined, "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)") {
			t.Errorf("session %q: the plan scans the entries:\n%s", session, joined)
		}
	}
}
