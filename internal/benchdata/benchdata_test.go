package benchdata

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

func TestVocabulary(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range Vocabulary {
		if seen[w] {
			t.Errorf("%q twice", w)
		}
		seen[w] = true
		if strings.Contains(w, Marker) {
			t.Errorf("%q overlaps the marker", w)
		}
		for _, r := range w {
			if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
				t.Errorf("%q needs escaping in JSON", w)
			}
		}
	}
	if len(Vocabulary) != 216 {
		t.Errorf("%d words; the package doc says 216", len(Vocabulary))
	}
}

// TestShape checks the first sessions of every set: exact size, chaining,
// turns, times, text that search sees, and the marker where the set puts
// it.
func TestShape(t *testing.T) {
	for _, s := range []Set{Search, TailShort, List} {
		for j := range min(s.Sessions, 3) {
			entries := s.Entries(j)
			if len(entries) != s.PerSession {
				t.Fatalf("%s session %d: %d entries, want %d", s.Name, j, len(entries), s.PerSession)
			}
			parent := ""
			for i, e := range entries {
				line, err := transcript.AppendJSON(nil, e)
				if err != nil || len(line) != EntrySize {
					t.Fatalf("%s session %d entry %d: %d bytes (%v), want %d: %s", s.Name, j, i, len(line), err, EntrySize, line)
				}
				back, err := transcript.Parse(line)
				if err != nil || !back.Equal(e) {
					t.Fatalf("%s session %d entry %d does not round-trip: %v", s.Name, j, i, err)
				}
				if e.ParentID != parent || !e.Timestamp.Equal(s.at(j, i)) {
					t.Fatalf("%s session %d entry %d: parent %q at %v, want %q at %v", s.Name, j, i, e.ParentID, e.Timestamp, parent, s.at(j, i))
				}
				wantType, wantTurn := transcript.TypeUserMessage, e.ID
				if i%2 == 1 {
					wantType, wantTurn = transcript.TypeAssistantMessage, entries[i-1].ID
				}
				if e.Type != wantType || e.TurnID != wantTurn {
					t.Fatalf("%s session %d entry %d: %s in turn %s, want %s in %s", s.Name, j, i, e.Type, e.TurnID, wantType, wantTurn)
				}
				text, ok := storekit.SearchText(e)
				if !ok || strings.HasPrefix(text, Marker+" ") != s.marked(j, i) {
					t.Fatalf("%s session %d entry %d: text %q, marked %v", s.Name, j, i, text, s.marked(j, i))
				}
				parent = e.ID
			}
		}
	}
	if k := TailLong.Key(0); k != (store.Key{Agent: "tail", ID: "long"}) {
		t.Errorf("TailLong key %v", k)
	}
}

func TestDeterministic(t *testing.T) {
	a, b := List.Entries(7), List.Entries(7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same session generated twice differs")
	}
	if c := List.Entries(8); c[0].ID == a[0].ID || string(c[0].Data) == string(a[0].Data) {
		t.Fatal("two sessions of a set are the same")
	}
	g1, g2 := NewGen(5), NewGen(5)
	at := time.Now()
	for range 10 {
		if e1, e2 := g1.Next(at, false), g2.Next(at, false); !e1.Equal(e2) {
			t.Fatalf("NewGen(5) made %+v and %+v", e1, e2)
		}
	}
}

// TestAllInTimeOrder checks that All yields a set's entries in time order
// and gives session j exactly Entries(j).
func TestAllInTimeOrder(t *testing.T) {
	for _, tc := range []struct {
		s     Set
		first int // how many entries to check
	}{{List, List.Total()}, {TailShort, TailShort.Total()}, {Search, 3 * Search.Sessions}} {
		want := map[int][]transcript.Entry{}
		pos := map[int]int{}
		var last time.Time
		n := 0
		for j, e := range tc.s.All() {
			if e.Timestamp.Before(last) {
				t.Fatalf("%s: entry %d at %v, after one at %v", tc.s.Name, n, e.Timestamp, last)
			}
			last = e.Timestamp
			if j < 5 { // Entries of every session of Search would take long
				if want[j] == nil {
					want[j] = tc.s.Entries(j)
				}
				if i := pos[j]; !e.Equal(want[j][i]) {
					t.Fatalf("%s: All gave session %d at %d %+v, Entries %+v", tc.s.Name, j, i, e, want[j][i])
				}
				pos[j]++
			}
			if n++; n == tc.first {
				break
			}
		}
		if n != tc.first {
			t.Fatalf("%s: All yielded %d entries, want %d", tc.s.Name, n, tc.first)
		}
	}
}

// TestMarkedEntries counts the marked positions of the search set, which
// the package doc and the rare queries rely on.
func TestMarkedEntries(t *testing.T) {
	n, inS0 := 0, 0
	for j := range Search.Sessions {
		for i := range Search.PerSession {
			if Search.marked(j, i) {
				n++
				if j == 0 {
					inS0++
				}
			}
		}
	}
	if n != 100 || inS0 != 1 {
		t.Fatalf("%d marked entries, %d in s0; want 100 and 1", n, inS0)
	}
}

// BenchmarkSearchSet generates the whole search set, as every store's
// loader does, and checks that the scan a store without an index would do
// finds each query's hits.
//
//	go test -run '^$' -bench SearchSet -benchtime 1x ./internal/benchdata/
func BenchmarkSearchSet(b *testing.B) {
	for b.Loop() {
		matches := make([]int, len(Queries))
		for j := range Search.Sessions {
			for _, e := range Search.Entries(j) {
				text, _ := storekit.SearchText(e)
				for k, q := range Queries {
					if q.Session != "" && Search.Key(j).ID != q.Session {
						continue
					}
					if _, ok := storekit.MatchText(text, storekit.SearchTerms(q.Text)); ok {
						matches[k]++
					}
				}
			}
		}
		for k, q := range Queries {
			b.Logf("%s %q: %d matches", q.Name, q.Text, matches[k])
			if min(matches[k], Limit) != q.Hits {
				b.Errorf("%s: %d matches, want %d hits", q.Name, matches[k], q.Hits)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*Search.Total()), "ns/entry")
}

// BenchmarkNext is the cost of making one entry, which benchmarks of
// appends pay inside their loops.
func BenchmarkNext(b *testing.B) {
	g := NewGen(1)
	i := 0
	for b.Loop() {
		g.Next(Base.Add(time.Duration(i)*time.Millisecond), false)
		i++
	}
}

// BenchmarkParse is the cost of decoding one entry from its wire line,
// which every store but memstore pays for each entry it reads, and
// BenchmarkSearchText that of finding the text search looks at, which the
// scan fallback pays on top for each entry it reads.
func BenchmarkParse(b *testing.B) {
	line, _ := transcript.AppendJSON(nil, NewGen(1).Next(Base, false))
	for b.Loop() {
		if _, err := transcript.Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchText(b *testing.B) {
	e := NewGen(1).Next(Base, false)
	for b.Loop() {
		if _, ok := storekit.SearchText(e); !ok {
			b.Fatal("no text")
		}
	}
}
