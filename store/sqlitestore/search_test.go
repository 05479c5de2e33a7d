package sqlitestore

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// searchTexts are what the search tests' sessions say: words, FTS5 and
// SQL syntax, quotes, non-ASCII case pairs and short words.
var searchTexts = []string{
	`Where is order 1042? It was due on Monday.`,
	`Your ORDER 1042 ships tomorrow; tracking: "ZX-99".`,
	`She said "hello" (NEAR the door) and typed a*b -- then 'x'; DROP TABLE entries; --`,
	`column filter text: foo AND bar OR NOT baz ^start {a b} + - * :`,
	`Grüße aus MÜNCHEN, ΣΊΣΥΦΟΣ and İstanbul`,
	`ok ok ok, an it is so`,
	`100% of the_underscore and back\slash and a NUL-free line`,
	`percent % and underscore _ are LIKE syntax, not ours`,
	`quotes "" '' "' and a lone " quote`,
	`order order order`,
}

// hostileQueries must be words to look for, never syntax.
var hostileQueries = []string{
	`order`, `ORDER 1042`, `1042?`, `der`, `or`, `ok`, `a`,
	`"`, `""`, `"hello"`, `'x'`, `' OR 1=1 --`, `'; DROP TABLE entries; --`, `DROP TABLE`,
	`NEAR(the door)`, `NEAR`, `a*b`, `a*`, `*`, `^start`, `text:`, `text: foo`, `column`, `{a b}`, `-`, `+`,
	`AND`, `OR NOT`, `foo AND bar`, `(`, `)`, `()`, `:`, `%`, `_`, `\`, `back\slash`, `100%`,
	`münchen`, `GRÜSSE`, `grüße`, `σίσυφος`, `istanbul`, `İstanbul`,
	"\x00", "a\x00b", "\xff\xfe", `""""`, `"' "`, `lone " quote`,
}

func TestSearchMatchesScan(t *testing.T) {
	for _, st := range indexStates {
		t.Run(st.name, func(t *testing.T) {
			byHand(t)
			testSearchMatchesScan(t, st.make)
		})
	}
}

func testSearchMatchesScan(t *testing.T, indexState func(*testing.T, *Store)) {
	s := openTest(t)
	ns := store.Namespace{Agent: "a", Owner: "u"}
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 4 {
		var entries []transcript.Entry
		for j, text := range searchTexts {
			at := start.Add(time.Duration(j*4+i) * time.Second)
			if j%3 == 0 {
				at = start // many entries share one instant: ties order by id
			}
			typ, data := transcript.TypeUserMessage, any(transcript.UserMessage{Text: text})
			if j%2 == 1 {
				typ, data = transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: text}
			}
			entries = append(entries, storetest.NewEntry(storetest.Head(entries), at, typ, data))
		}
		appendAll(t, s, ns.Key(fmt.Sprintf("s%d", i)), entries...)
	}
	// Another owner says the same things: never found from namespace.
	for i := range 2 {
		seedTexts(t, s, store.Key{Agent: "a", Owner: "other", ID: fmt.Sprintf("s%d", i)}, start)
		seedTexts(t, s, store.Key{Agent: "a", ID: fmt.Sprintf("s%d", i)}, start)
	}
	indexState(t, s)

	saved := sessionScanMax
	t.Cleanup(func() { sessionScanMax = saved })
	for _, text := range hostileQueries {
		for _, q := range []store.SearchQuery{
			{Text: text},
			{Text: text, Limit: 3},
			{Text: text, Session: "s2"},
			{Text: text, Session: "s2", Limit: 1},
		} {
			// Within one session, both plans: the index and the session's entries.
			sessionScanMax = 0
			if q.Limit == 1 {
				sessionScanMax = saved
			}
			if len(storekit.SearchTerms(q.Text)) == 0 {
				continue
			}
			got, err := s.Search(t.Context(), ns, q)
			if err != nil {
				t.Fatalf("Search(%q): %v", q.Text, err)
			}
			want, err := store.Search(t.Context(), scanOnly{s}, ns, q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Search(%+v) differs from the scan:\n got %v\nwant %v", q, hitIDs(got), hitIDs(want))
			}
			for _, h := range got {
				if h.SessionID == "" || h.Snippet == "" {
					t.Errorf("Search(%q): hit %+v lacks a session or snippet", q.Text, h)
				}
			}
		}
	}
	// The store is intact after all that.
	if n := rawCount(t, s, `SELECT count(*) FROM entries`); n != 8*len(searchTexts) {
		t.Fatalf("%d entries after the hostile queries, want %d", n, 8*len(searchTexts))
	}
	if hits, err := s.Search(t.Context(), ns, store.SearchQuery{Text: `DROP TABLE entries`}); err != nil || len(hits) != 4 {
		t.Fatalf("Search for SQL as text: %d hits, %v; want the 4 entries that say it", len(hits), err)
	}
	if hits, err := s.Search(t.Context(), ns, store.SearchQuery{Text: `(NEAR the`}); err != nil || len(hits) != 4 {
		t.Fatalf("Search for FTS5 syntax as text: %d hits, %v; want the 4 entries that say it", len(hits), err)
	}
}

func seedTexts(t *testing.T, s *Store, key store.Key, at time.Time) {
	t.Helper()
	var entries []transcript.Entry
	for _, text := range searchTexts {
		entries = append(entries, storetest.NewEntry(storetest.Head(entries), at, transcript.TypeUserMessage, transcript.UserMessage{Text: text}))
	}
	appendAll(t, s, key, entries...)
}

func hitIDs(h []store.SearchHit) []string {
	var ids []string
	for _, x := range h {
		ids = append(ids, x.SessionID+"/"+x.EntryID)
	}
	return ids
}

func TestSearchRejects(t *testing.T) {
	s := openTest(t)
	for _, tc := range []struct {
		ns store.Namespace
		q  store.SearchQuery
	}{
		{store.Namespace{Agent: "a"}, store.SearchQuery{Text: "   "}},
		{store.Namespace{Agent: "../x"}, store.SearchQuery{Text: "x"}},
		{store.Namespace{Agent: "a"}, store.SearchQuery{Text: "x", Session: "a/b"}},
	} {
		if _, err := s.Search(t.Context(), tc.ns, tc.q); err == nil {
			t.Errorf("Search(%v, %+v) succeeded", tc.ns, tc.q)
		}
	}
}
