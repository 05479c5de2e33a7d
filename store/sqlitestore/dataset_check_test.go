package sqlitestore

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// TestBulkLoadMatchesAppend checks the benchmarks' loader: what it writes
// reads, lists and searches exactly as the same entries appended one by
// one in the same order, with the same row ids, so the benchmarks measure
// the store as Append leaves it.
func TestBulkLoadMatchesAppend(t *testing.T) {
	ns := store.Namespace{Agent: "bulk", Owner: "u"}
	const sessions, perSession = 3, 40
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gens := make([]*benchdata.Gen, sessions)
	keys := make([]store.Key, sessions)
	for j := range gens {
		gens[j] = benchdata.NewGen(uint64(j))
		keys[j] = ns.Key(fmt.Sprintf("s%d", j))
	}
	// Position by position across the sessions, several entries per
	// millisecond, as the search set interleaves them.
	type item struct {
		j int
		e transcript.Entry
	}
	var items []item
	entries := make([][]transcript.Entry, sessions)
	for i := range perSession {
		for j, g := range gens {
			e := g.Next(base.Add(time.Duration(i/2)*time.Millisecond), (i*sessions+j)%17 == 0)
			items = append(items, item{j, e})
			entries[j] = append(entries[j], e)
		}
	}

	bulk, appended := openTest(t), openTest(t)
	l := &bulkLoader{s: bulk, rowIDs: map[int64]int64{}}
	err := l.load(t.Context(), keys, func(yield func(int, transcript.Entry) bool) {
		for _, it := range items {
			if !yield(it.j, it.e) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		appendAll(t, appended, keys[it.j], it.e)
	}

	for j, key := range keys {
		a, errA := bulk.Read(t.Context(), key)
		b, errB := appended.Read(t.Context(), key)
		if errA != nil || errB != nil || !sameEntries(a, b) || !sameEntries(a, entries[j]) {
			t.Fatalf("Read(%s): loaded %d entries (%v), appended %d (%v)", key, len(a), errA, len(b), errB)
		}
	}
	pa, errA := bulk.List(t.Context(), ns, store.ListOptions{})
	pb, errB := appended.List(t.Context(), ns, store.ListOptions{})
	if errA != nil || errB != nil || !reflect.DeepEqual(pa, pb) {
		t.Fatalf("List: loaded %+v (%v)\nappended %+v (%v)", pa, errA, pb, errB)
	}
	for _, text := range []string{benchdata.Marker, "order", "you order", "the", "ok"} {
		ha, errA := bulk.Search(t.Context(), ns, store.SearchQuery{Text: text, Limit: 7})
		hb, errB := appended.Search(t.Context(), ns, store.SearchQuery{Text: text, Limit: 7})
		if errA != nil || errB != nil || len(ha) == 0 || !reflect.DeepEqual(ha, hb) {
			t.Fatalf("Search(%q): loaded %v (%v), appended %v (%v)", text, hitIDs(ha), errA, hitIDs(hb), errB)
		}
	}
	rowIDs := func(s *Store) []string {
		rows, err := s.r.Query(`SELECT eid, body FROM entries ORDER BY eid`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id int64
			var body []byte
			if err := rows.Scan(&id, &body); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprintf("%d:%.40s", id, body))
		}
		return ids
	}
	if a, b := rowIDs(bulk), rowIDs(appended); !reflect.DeepEqual(a, b) {
		t.Fatalf("entry rows differ:\nloaded   %v\nappended %v", a, b)
	}
}
