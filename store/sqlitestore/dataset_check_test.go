package sqlitestore

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// TestBulkLoadMatchesAppend checks the benchmarks' loader: what it writes
// reads, lists and searches exactly as the same entries appended one by
// one, so the benchmarks measure the store as Append leaves it.
func TestBulkLoadMatchesAppend(t *testing.T) {
	scope := store.Scope{Agent: "bulk", Owner: "u"}
	const sessions, perSession = 3, 40
	g := newEntryGen(7)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entries := make([][]transcript.Entry, sessions)
	for i := range perSession {
		for j := range sessions {
			parent := ""
			if i > 0 {
				parent = entries[j][i-1].ID
			}
			// Several entries per millisecond, across sessions.
			entries[j] = append(entries[j], g.entry(parent, i, base.Add(time.Duration(i/2)*time.Millisecond), (i*sessions+j)%17 == 0))
		}
	}
	for _, e := range entries[0] {
		if b, _ := transcript.AppendJSON(nil, e); len(b) != entrySize {
			t.Fatalf("an entry of the data set is %d bytes, want %d: %s", len(b), entrySize, b)
		}
	}

	bulk, appended := openTest(t), openTest(t)
	l := &bulkLoader{s: bulk, rowIDs: map[int64]int64{}}
	if err := l.load(t.Context(), scope, sessions, perSession, func(j, i int, _ string) transcript.Entry { return entries[j][i] }); err != nil {
		t.Fatal(err)
	}
	for i := range perSession {
		for j := range sessions {
			appendAll(t, appended, scope.Key(fmt.Sprintf("s%d", j)), entries[j][i])
		}
	}

	for j := range sessions {
		key := scope.Key(fmt.Sprintf("s%d", j))
		a, errA := bulk.Read(t.Context(), key)
		b, errB := appended.Read(t.Context(), key)
		if errA != nil || errB != nil || !sameEntries(a, b) || !sameEntries(a, entries[j]) {
			t.Fatalf("Read(%s): loaded %d entries (%v), appended %d (%v)", key, len(a), errA, len(b), errB)
		}
	}
	pa, errA := bulk.List(t.Context(), scope, store.ListOptions{})
	pb, errB := appended.List(t.Context(), scope, store.ListOptions{})
	if errA != nil || errB != nil || !reflect.DeepEqual(pa, pb) {
		t.Fatalf("List: loaded %+v (%v)\nappended %+v (%v)", pa, errA, pb, errB)
	}
	for _, text := range []string{"zanzibar", "order", "refund invoice", "the"} {
		ha, errA := bulk.Search(t.Context(), scope, store.SearchQuery{Text: text, Limit: 7})
		hb, errB := appended.Search(t.Context(), scope, store.SearchQuery{Text: text, Limit: 7})
		if errA != nil || errB != nil || !reflect.DeepEqual(ha, hb) {
			t.Fatalf("Search(%q): loaded %v (%v), appended %v (%v)", text, hitIDs(ha), errA, hitIDs(hb), errB)
		}
	}
	rowIDs := func(s *Store) []int64 {
		rows, err := s.r.Query(`SELECT eid FROM entries ORDER BY eid`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return ids
	}
	if a, b := rowIDs(bulk), rowIDs(appended); !reflect.DeepEqual(a, b) {
		t.Fatalf("entry row ids differ:\nloaded   %v\nappended %v", a, b)
	}
}
