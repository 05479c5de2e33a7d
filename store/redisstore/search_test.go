package redisstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// The runtime's scan fallback (store.Search) works over this store, and
// one owner's search never finds another owner's words or the project's.
func TestSearchFallback(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	alice := store.Namespace{Agent: "support", Owner: "alice"}
	bob := store.Namespace{Agent: "support", Owner: "bob"}
	project := store.Namespace{Agent: "support"}
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	write := func(ns store.Namespace, id string, texts ...string) []transcript.Entry {
		var entries []transcript.Entry
		for i, text := range texts {
			typ, data := transcript.TypeUserMessage, any(transcript.UserMessage{Text: text})
			if i%2 == 1 {
				typ, data = transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: text}
			}
			e := storetest.NewEntry(storetest.Head(entries), at.Add(time.Duration(len(entries))*time.Second), typ, data)
			if err := s.Append(ctx, ns.Key(id), e); err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		at = at.Add(time.Minute)
		return entries
	}
	a1 := write(alice, "a1", "Where is my Purple Umbrella?", "Your purple umbrella ships tomorrow.")
	a2 := write(alice, "a2", "Cancel the umbrella order", "Done.")
	write(bob, "b1", "I also lost a purple umbrella")
	write(project, "p1", "purple umbrella policy")

	hits, err := store.Search(ctx, s, alice, store.SearchQuery{Text: "umbrella PURPLE"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.SessionID+"/"+h.EntryID)
	}
	want := []string{"a1/" + a1[1].ID, "a1/" + a1[0].ID}
	if !slices.Equal(got, want) {
		t.Fatalf("alice's search: %v, want %v (newest first, hers only)", got, want)
	}
	if hits[0].Snippet == "" || !hits[0].Time.Equal(a1[1].Timestamp) {
		t.Fatalf("hit %+v: want a snippet and the entry's time", hits[0])
	}
	hits, err = store.Search(ctx, s, alice, store.SearchQuery{Text: "umbrella", Session: "a2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].EntryID != a2[0].ID {
		t.Fatalf("search within a2: %+v", hits)
	}
	for _, ns := range []store.Namespace{bob, project} {
		hits, err := store.Search(ctx, s, ns, store.SearchQuery{Text: "tomorrow"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 0 {
			t.Fatalf("%v found alice's words: %+v", ns, hits)
		}
		hits, err = store.Search(ctx, s, ns, store.SearchQuery{Text: "umbrella", Session: "a1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 0 {
			t.Fatalf("%v reached alice's session a1 by id: %+v", ns, hits)
		}
	}
}

// Namespaces finds every namespace of the store's prefix and none of another's.
func TestNamespaces(t *testing.T) {
	s := newStore(t)
	other := newStore(t)
	ctx := t.Context()
	want := []store.Namespace{{Agent: "a"}, {Agent: "a", Owner: "u1"}, {Agent: "a", Owner: "u2"}, {Agent: "b.c", Owner: "x@y"}}
	for _, sc := range want {
		storetestAppend(t, s, sc.Key("s1"), 1)
	}
	storetestAppend(t, other, store.Namespace{Agent: "z"}.Key("s1"), 1)
	got, err := s.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Namespaces() = %v, want %v", got, want)
	}
}
