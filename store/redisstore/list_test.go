package redisstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// Info kept by the append script must be what storekit.Info computes from the
// transcript, for every kind of entry, timestamps that go back, titles
// from a user message that is only white space, and nanoseconds.
func TestInfoMatchesApply(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	key := store.Key{Agent: "agent", Owner: "", ID: "s1"}
	base := time.Now().UTC().Add(-time.Hour)
	const ms = time.Millisecond
	type step struct {
		typ  transcript.Type
		data any
		at   time.Duration
	}
	steps := []step{
		{transcript.TypeSessionMode, transcript.SessionMode{ToolMode: transcript.ToolModeAsk}, 0},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "   \n\t "}, 1 * ms},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "  Where   is\norder\t1042? "}, 2 * ms},
		{transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "Let me look."}, 3 * ms},
		{transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "a1", CallID: "c1", Tool: "lookup"}, 4 * ms},
		{transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "a2", CallID: "c2", Tool: "lookup"}, 5 * ms},
		{transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "a1", Decision: transcript.VerdictAllow}, -time.Minute},
		{transcript.TypeToolResult, transcript.ToolResult{CallID: "c1", Result: "shipped"}, 7 * ms},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "not the title"}, 8 * ms},
		{transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "a2", Decision: transcript.VerdictDeny}, 9 * ms},
		{transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "a3", Decision: transcript.VerdictDeny}, 10 * ms},
		{"x.custom", map[string]any{"text": "ignored"}, 11 * ms},
		{transcript.TypeTurnEnd, transcript.TurnEnd{}, 11*ms + 7},
	}
	var entries []transcript.Entry
	for i, st := range steps {
		e := storetest.NewEntry(storetest.Head(entries), base, st.typ, st.data)
		e.Timestamp = base.Add(st.at) // to the nanosecond, and going back once
		if err := s.Append(ctx, key, e); err != nil {
			t.Fatalf("append %d (%s): %v", i, st.typ, err)
		}
		entries = append(entries, e)
		want := storekit.Info(key, entries)
		got, err := s.Stat(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("after entry %d (%s): Stat\n got  %+v\n want %+v", i, st.typ, got, want)
		}
		page, err := s.List(ctx, key.Namespace(), store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) != 1 || page.Sessions[0] != want {
			t.Fatalf("after entry %d (%s): List\n got  %+v\n want %+v", i, st.typ, page.Sessions, want)
		}
	}
	if _, err := s.Stat(ctx, store.Key{Agent: "agent", ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of an unknown session: %v, want ErrNotFound", err)
	}
}

// Sessions whose activity ties to the nanosecond, or is a nanosecond
// apart, and ids that are prefixes of one another, page in exactly
// storekit.Less order at every page size.
func TestListTiesAndPrefixes(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ns := store.Namespace{Agent: "agent", Owner: "user@example.com"}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	ids := []string{"a", "a-", "a.", "aa", "ab", "A", "Z", "z", "z-", "zz", "-", "_", "@", "0", "9", "a-b", "a_b"}
	var want []store.SessionInfo
	r := rand.New(rand.NewPCG(3, 4))
	for i, id := range ids {
		// Three activity levels, a nanosecond apart; most sessions tie.
		at := base.Add(time.Duration(r.IntN(3)))
		e := storetest.NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: fmt.Sprint("hello ", i)})
		e.Timestamp = at
		if err := s.Append(ctx, ns.Key(id), e); err != nil {
			t.Fatal(err)
		}
		want = append(want, storekit.Info(ns.Key(id), []transcript.Entry{e}))
	}
	storekit.SortSessions(want)
	for _, limit := range []int{1, 2, 3, 5, 16, 17, 18, 1000} {
		var got []store.SessionInfo
		opt := store.ListOptions{Limit: limit}
		for {
			page, err := s.List(ctx, ns, opt)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Sessions...)
			if page.NextCursor == "" {
				break
			}
			opt.Cursor = page.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listing\n got  %v\n want %v", limit, ids2(got), ids2(want))
		}
	}
	// The last page is exact: no cursor to an empty page.
	page, err := s.List(ctx, ns, store.ListOptions{Limit: len(ids)})
	if err != nil {
		t.Fatal(err)
	}
	if page.NextCursor != "" {
		t.Fatalf("a page holding every session has NextCursor %q", page.NextCursor)
	}
}

func ids2(infos []store.SessionInfo) []string {
	var s []string
	for _, i := range infos {
		s = append(s, fmt.Sprintf("%s@%d", i.ID, i.LastActivity.Nanosecond()))
	}
	return s
}

// A session that moves ahead leaves its old place in the index: it is
// listed once, at its new place.
func TestListMovesSession(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ns := store.Namespace{Agent: "agent"}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	heads := map[string]string{}
	for i, id := range []string{"one", "two", "three"} {
		e := storetest.NewEntry("", base.Add(time.Duration(i)*time.Second), transcript.TypeUserMessage, transcript.UserMessage{Text: id})
		if err := s.Append(ctx, ns.Key(id), e); err != nil {
			t.Fatal(err)
		}
		heads[id] = e.ID
	}
	e := storetest.NewEntry(heads["one"], base.Add(time.Minute), transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "later"})
	if err := s.Append(ctx, ns.Key("one"), e); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, ns, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, info := range page.Sessions {
		got = append(got, info.ID)
	}
	if !slices.Equal(got, []string{"one", "three", "two"}) {
		t.Fatalf("listing %v, want [one three two]", got)
	}
	if n := s.Client().ZCard(ctx, "{"+s.Prefix()+":agent:}:idx").Val(); n != 3 {
		t.Fatalf("index holds %d members for 3 sessions", n)
	}
}
