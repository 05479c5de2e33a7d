package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// testSearcher checks a native search: every word must match, in any case;
// hits come newest first; an owner never finds another's text; Session and
// Limit narrow the hits.
func testSearcher(t *testing.T, s store.Store) {
	sr := skipUnless[store.Searcher](t, s)
	agent := name("agent")
	alice := store.Namespace{Agent: agent, Owner: name("alice")}
	bob := store.Namespace{Agent: agent, Owner: name("bob")}
	project := store.Namespace{Agent: agent}
	start := base()
	write := func(key store.Key, at time.Time, texts ...string) []transcript.Entry {
		var entries []transcript.Entry
		for i, text := range texts {
			typ := transcript.TypeUserMessage
			var data any = transcript.UserMessage{Text: text}
			if i%2 == 1 {
				typ = transcript.TypeAssistantMessage
				data = transcript.AssistantMessage{Text: text}
			}
			entries = append(entries, NewEntry(Head(entries), at.Add(time.Duration(i)*time.Second), typ, data))
		}
		appendAll(t, s, key, entries...)
		return entries
	}
	a1 := write(alice.Key("a1"), start, "The Quick brown FOX jumps", "A lazy dog answers")
	a2 := write(alice.Key("a2"), start.Add(time.Minute), "quick thinking, said the fox", "nothing to see")
	write(bob.Key("b1"), start.Add(2*time.Minute), "Bob asks something quick")
	write(project.Key("a1"), start.Add(3*time.Minute), "a quick fox of the project")

	search := func(ns store.Namespace, q store.SearchQuery) []store.SearchHit {
		t.Helper()
		hits, err := sr.Search(t.Context(), ns, q)
		if err != nil {
			t.Fatalf("Search(%s, %+v): %v", ns, q, err)
		}
		return hits
	}
	expect := func(ns store.Namespace, q store.SearchQuery, rule string, want ...transcript.Entry) {
		t.Helper()
		hits := search(ns, q)
		got := make([]string, len(hits))
		for i, h := range hits {
			got[i] = h.EntryID
		}
		wantIDs := make([]string, len(want))
		for i, e := range want {
			wantIDs[i] = e.ID
		}
		if !slices.Equal(got, wantIDs) {
			t.Errorf("%s: Search(%s, %q, session %q, limit %d) found entries %v, want %v", rule, ns, q.Text, q.Session, q.Limit, got, wantIDs)
			return
		}
		for i, h := range hits {
			e := want[i]
			if !h.Time.Equal(e.Timestamp) || h.Snippet == "" {
				t.Errorf("%s: hit %s has time %v and snippet %q; want the entry's timestamp %v and a snippet", rule, h.EntryID, h.Time, h.Snippet, e.Timestamp)
			}
			if want := sessionOf(e, map[string][]transcript.Entry{"a1": a1, "a2": a2}); want != "" && h.SessionID != want {
				t.Errorf("%s: hit %s names session %q, want %q", rule, h.EntryID, h.SessionID, want)
			}
		}
	}
	expect(alice, store.SearchQuery{Text: "quick fox"}, "every word matches, case-insensitively, newest first", a2[0], a1[0])
	expect(alice, store.SearchQuery{Text: "QUICK Fox"}, "matching ignores the case of the query", a2[0], a1[0])
	expect(alice, store.SearchQuery{Text: "lazy quick"}, "an entry must hold every word of the query", []transcript.Entry{}...)
	expect(alice, store.SearchQuery{Text: "answers"}, "assistant messages are searched", a1[1])
	expect(alice, store.SearchQuery{Text: "fox", Session: "a1"}, "Session restricts the search to one session", a1[0])
	expect(alice, store.SearchQuery{Text: "quick", Limit: 1}, "Limit caps the hits, newest first", a2[0])
	expect(bob, store.SearchQuery{Text: "fox"}, "owner B never finds owner A's or the project's text", []transcript.Entry{}...)
	if hits := search(bob, store.SearchQuery{Text: "quick"}); len(hits) != 1 || hits[0].SessionID != "b1" {
		t.Errorf("owner B's search for a word in B's own session and in others' must find B's entry only; got %+v", hits)
	}
	if hits := search(project, store.SearchQuery{Text: "quick fox"}); len(hits) != 1 || hits[0].SessionID != "a1" {
		t.Errorf("the project scope's search must find the project's session only, not owners' sessions with the same id; got %+v", hits)
	}
	expect(alice, store.SearchQuery{Text: "quick", Session: "b1"}, "Session never reaches another owner's session", []transcript.Entry{}...)
}

func sessionOf(e transcript.Entry, sessions map[string][]transcript.Entry) string {
	for id, entries := range sessions {
		for _, x := range entries {
			if x.ID == e.ID {
				return id
			}
		}
	}
	return ""
}
