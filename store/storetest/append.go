package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var appendChecks = []check{
	{"Read/AppendOrder", testAppendOrder},
	{"Read/ExactlyAsAppended", testExactRoundTrip},
	{"Read/NanosecondTimestamp", testNanosecondTimestamp},
	{"Read/ExtremeTimestamps", testExtremeTimestamps},
	{"Read/UnknownSessionIsEmpty", testUnknownSession},
	{"Append/Conflict/NewSessionWithParent", testConflictNewSession},
	{"Append/Conflict/StaleParent", testConflictStale},
	{"Append/Conflict/WrongParent", testConflictWrong},
	{"Append/Conflict/RacingWriters", testRace},
	{"Append/InvalidEntry", testInvalidEntry},
}

func testAppendOrder(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	first := seed(t, s, key, base(), 4)
	checkRead(t, s, key, first, "Read returns entries in append order")
	more := Chain(Head(first), base().Add(time.Second), 7)
	appendAll(t, s, key, more...)
	checkRead(t, s, key, append(first, more...), "Read returns entries in append order after more appends")
}

func testExactRoundTrip(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	at := base()
	var big strings.Builder
	for big.Len() < 1<<20 {
		big.WriteString("ab€ Ω 😀 line\n")
	}
	var entries []transcript.Entry
	add := func(typ transcript.Type, data any, edit func(*transcript.Entry)) {
		e := NewEntry(Head(entries), at.Add(time.Duration(len(entries))*time.Millisecond), typ, data)
		if edit != nil {
			edit(&e)
		}
		entries = append(entries, e)
	}
	add(transcript.TypeUserMessage, transcript.UserMessage{Text: "Grüße, 世界 🌍 \"quoted\" <b>&amp;</b> back\\slash\ttab\x01ctl\u2028sep"}, nil)
	add(transcript.TypeAssistantMessage, transcript.AssistantMessage{
		Text:      "calling",
		ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"order":1042,"nested":{"list":[1,"two",null,true]}}`)}},
		Model:     "m-1",
	}, nil)
	add(transcript.TypeUserMessage, transcript.UserMessage{Text: big.String()}, nil)
	add("x.custom.kind", json.RawMessage(`{"a":[1,2,{"b":null}],"n":1.5e300,"s":"ü","deep":{"deeper":{"deepest":[]}}}`), nil)
	add("plugin.event", nil, func(e *transcript.Entry) { e.TurnID = "" })
	add(transcript.TypeUserMessage, nil, func(e *transcript.Entry) {
		e.Data = json.RawMessage(" {\n  \"text\" :  \"spaced out\"\n} ")
	})
	add(transcript.TypeTurnEnd, transcript.TurnEnd{Error: &transcript.ErrorInfo{Code: transcript.CodeModelError, Message: "upstream failed"}}, func(e *transcript.Entry) {
		e.Status = transcript.StatusError
	})
	add(transcript.TypeGovernanceNotice, transcript.GovernanceNotice{Kind: "kind_spool_does_not_know", Message: "kept as written"}, nil)
	appendAll(t, s, key, entries...)
	checkRead(t, s, key, entries, "Read returns entries exactly as appended (unicode, 1 MiB of text, tool call arguments, unknown types and data keys, an empty turn id)")
}

func testNanosecondTimestamp(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	e := NewEntry("", base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})
	e.Timestamp = e.Timestamp.Add(123456789 * time.Nanosecond).In(time.FixedZone("UTC+5", 5*3600))
	appendAll(t, s, key, e)
	checkRead(t, s, key, []transcript.Entry{e}, "Read returns the timestamp as appended, to the nanosecond (the wire format keeps every digit)")
}

// testExtremeTimestamps: an entry one store takes, every store takes, so
// that a transfer between any two never fails on one: the first and last
// times storekit.CheckEntry accepts, each in a session of its own (whose
// listing order and cursors use it).
func testExtremeTimestamps(t *testing.T, s store.Store) {
	ns := newNamespace()
	for i, at := range []time.Time{storekit.MinTimestamp, storekit.MaxTimestamp} {
		key := ns.Key(name(fmt.Sprint("sess", i)))
		e := NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: "hi"})
		e.Timestamp = at
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatalf("Append of an entry at %s, which storekit.CheckEntry accepts: %v", at.Format(time.RFC3339Nano), err)
		}
		checkRead(t, s, key, []transcript.Entry{e}, "Read returns an entry at the edge of the times every store takes")
	}
	page, err := s.List(t.Context(), ns, store.ListOptions{})
	if err != nil || len(page.Sessions) != 2 {
		t.Fatalf("List of the two sessions: %d, %v", len(page.Sessions), err)
	}
}

func testUnknownSession(t *testing.T, s store.Store) {
	ns := newNamespace()
	seed(t, s, ns.Key(name("other")), base(), 2)
	for _, key := range []store.Key{ns.Key(name("sess")), {Agent: name("agent"), ID: name("sess")}, {Agent: ns.Agent, Owner: name("owner"), ID: name("sess")}} {
		got, err := s.Read(t.Context(), key)
		if err != nil || len(got) != 0 {
			t.Errorf("Read of a session the store does not have (%s) must return no entries and no error; got %d entries, error %v", key, len(got), err)
		}
	}
}

func expectConflict(t *testing.T, s store.Store, key store.Key, e transcript.Entry, rule string) {
	t.Helper()
	if err := s.Append(t.Context(), key, e); !errors.Is(err, store.ErrConflict) {
		t.Errorf("%s: Append must fail with ErrConflict (errors.Is); got %v", rule, err)
	}
}

func testConflictNewSession(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	e := NewEntry(transcript.NewID(base()), base(), transcript.TypeUserMessage, transcript.UserMessage{Text: "orphan"})
	expectConflict(t, s, key, e, "the first entry of a new session has a non-empty parentId")
	checkRead(t, s, key, nil, "a rejected first entry is not stored")
	if got := listAll(t, s, ns, 0); len(got) != 0 {
		t.Errorf("a rejected first entry must not create the session: List shows %v", infoIDs(got))
	}
	first := seed(t, s, key, base(), 1)
	checkRead(t, s, key, first, "after a rejected first entry, a valid one starts the session")
}

func testConflictStale(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	entries := seed(t, s, key, base(), 3)
	at := base().Add(time.Minute)
	expectConflict(t, s, key, NewEntry(entries[1].ID, at, transcript.TypeUserMessage, transcript.UserMessage{Text: "stale"}),
		"parentId is an older entry of the session, not its last")
	expectConflict(t, s, key, NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: "restart"}),
		"parentId is empty but the session has entries")
	expectConflict(t, s, key, entries[2], "the session's last entry appended again (a retry after success)")
	checkRead(t, s, key, entries, "a rejected entry is not stored")
	got := listAll(t, s, ns, 0)
	if info, n := find(got, key.ID); n != 1 {
		t.Errorf("List shows the session %d times, want once", n)
	} else if d := diffInfo(info, storekit.Info(key, entries)); d != "" {
		t.Errorf("a rejected entry must not change the session's info: %s", d)
	}
	next := NewEntry(Head(entries), at, transcript.TypeUserMessage, transcript.UserMessage{Text: "fresh"})
	appendAll(t, s, key, next)
	checkRead(t, s, key, append(entries, next), "after rejected entries, a child of the last entry is appended")
}

func testConflictWrong(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	entries := seed(t, s, key, base(), 2)
	other := seed(t, s, ns.Key(name("other")), base(), 2)
	at := base().Add(time.Minute)
	expectConflict(t, s, key, NewEntry(transcript.NewID(at), at, transcript.TypeUserMessage, nil),
		"parentId is an id the session never had")
	expectConflict(t, s, key, NewEntry(Head(other), at, transcript.TypeUserMessage, nil),
		"parentId is the last entry of another session")
	expectConflict(t, s, key, NewEntry(strings.ToLower(Head(entries)), at, transcript.TypeUserMessage, nil),
		"parentId is the last entry's id in another case")
	checkRead(t, s, key, entries, "a rejected entry is not stored")
}

// testRace has writers race on one session: each reads the head and appends
// a child of it. Of the entries with the same parent exactly one may win,
// and the transcript must stay one chain holding every winner and no loser.
func testRace(t *testing.T, s store.Store) {
	const writers, steps = 8, 16
	key := newNamespace().Key(name("sess"))
	var (
		mu       sync.Mutex
		won      = map[string]string{} // parent -> winning entry id
		lost     = map[string]bool{}
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	start := base()
	for w := range writers {
		wg.Go(func() {
			for attempt := 0; attempt < 50*steps; attempt++ {
				entries, err := s.Read(t.Context(), key)
				if err != nil {
					fail("writer %d: Read: %v", w, err)
					return
				}
				if len(entries) >= steps {
					return
				}
				e := NewEntry(Head(entries), start.Add(time.Duration(attempt)*time.Millisecond), transcript.TypeUserMessage,
					transcript.UserMessage{Text: fmt.Sprintf("writer %d attempt %d", w, attempt)})
				err = s.Append(t.Context(), key, e)
				mu.Lock()
				switch {
				case err == nil:
					if prev, dup := won[e.ParentID]; dup {
						failures = append(failures, fmt.Sprintf("two appends with parentId %q both succeeded (%s and %s): the conditional append let two writers interleave", e.ParentID, prev, e.ID))
					}
					won[e.ParentID] = e.ID
				case errors.Is(err, store.ErrConflict):
					lost[e.ID] = true
				default:
					failures = append(failures, fmt.Sprintf("writer %d: Append: %v (want success or ErrConflict)", w, err))
				}
				mu.Unlock()
				if err != nil && !errors.Is(err, store.ErrConflict) {
					return
				}
			}
			fail("writer %d gave up after %d attempts", w, 50*steps)
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error("racing writers: " + f)
	}
	got := read(t, s, key)
	if len(got) != len(won) {
		t.Errorf("racing writers: %d appends succeeded but the session has %d entries", len(won), len(got))
	}
	parent := ""
	for i, e := range got {
		if e.ParentID != parent {
			t.Fatalf("racing writers: the transcript is not a chain: entry %d has parentId %q, the entry before it is %q", i, e.ParentID, parent)
		}
		if won[parent] != e.ID {
			t.Errorf("racing writers: entry %d is %s, but the append that succeeded with that parent was %s", i, e.ID, won[parent])
		}
		if lost[e.ID] {
			t.Errorf("racing writers: entry %s was rejected with ErrConflict but is stored", e.ID)
		}
		parent = e.ID
	}
}

func testInvalidEntry(t *testing.T, s store.Store) {
	ns := newNamespace()
	fresh := ns.Key(name("fresh"))
	existing := ns.Key(name("existing"))
	entries := seed(t, s, existing, base(), 2)
	at := base().Add(time.Minute)
	cases := []struct {
		name string
		edit func(*transcript.Entry)
	}{
		{"no id", func(e *transcript.Entry) { e.ID = "" }},
		{"no type", func(e *transcript.Entry) { e.Type = "" }},
		{"zero timestamp", func(e *transcript.Entry) { e.Timestamp = time.Time{} }},
		{"data not a JSON object", func(e *transcript.Entry) { e.Data = json.RawMessage(`[1,2]`) }},
		{"data not JSON", func(e *transcript.Entry) { e.Data = json.RawMessage(`{"text":`) }},
	}
	for _, c := range cases {
		for _, key := range []store.Key{fresh, existing} {
			parent := ""
			if key == existing {
				parent = Head(entries)
			}
			e := NewEntry(parent, at, transcript.TypeUserMessage, transcript.UserMessage{Text: "bad"})
			c.edit(&e)
			if err := s.Append(t.Context(), key, e); !errors.Is(err, store.ErrInvalidEntry) {
				t.Errorf("an entry with %s must be refused with ErrInvalidEntry (errors.Is); Append to %s got %v", c.name, key, err)
			}
		}
	}
	checkRead(t, s, fresh, nil, "a refused entry is not stored (new session)")
	checkRead(t, s, existing, entries, "a refused entry is not stored (existing session)")
	if got := listAll(t, s, ns, 0); len(got) != 1 {
		t.Errorf("refused entries must not create sessions: List shows %v, want only %s", infoIDs(got), existing.ID)
	}
}
