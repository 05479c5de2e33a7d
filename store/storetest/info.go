package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var infoChecks = []check{
	{"Info/Fields", testInfoFields},
	{"Info/ClockGoingBack", testInfoClockBack},
	{"Info/NoUserMessage", testInfoNoUserMessage},
	{"Info/Rename", testInfoRename},
	{"Info/Compactions", testInfoCompactions},
}

var deleteChecks = []check{
	{"Delete/SameIDStartsEmpty", testDelete},
	{"Delete/UnknownSessionIsNotAnError", testDeleteUnknown},
}

// listed returns the info List gives for key, failing t unless the session
// is listed exactly once.
func listed(t *testing.T, s store.Store, key store.Key) store.SessionInfo {
	t.Helper()
	info, n := find(listAll(t, s, key.Namespace(), store.MaxListLimit), key.ID)
	if n != 1 {
		t.Fatalf("List of %s shows session %s %d times, want once", key.Namespace(), key.ID, n)
	}
	return info
}

// checkInfo compares the info List (and Stat, when the store has it) gives
// for key with storekit.Info over want, the session's transcript.
func checkInfo(t *testing.T, s store.Store, key store.Key, want []transcript.Entry, when string) {
	t.Helper()
	ref := storekit.Info(key, want)
	if d := diffInfo(listed(t, s, key), ref); d != "" {
		t.Errorf("%s: List's SessionInfo must equal storekit.Info over the transcript: %s", when, d)
	}
	if st, ok := s.(store.Stater); ok {
		info, err := st.Stat(t.Context(), key)
		if err != nil {
			t.Errorf("%s: Stat: %v", when, err)
		} else if d := diffInfo(info, ref); d != "" {
			t.Errorf("%s: Stat's SessionInfo must equal storekit.Info over the transcript: %s", when, d)
		}
	}
}

func testInfoFields(t *testing.T, s store.Store) {
	key := store.Key{Agent: name("agent"), Owner: name("owner"), ID: name("sess")}
	start := base()
	question := "  Where is\n\norder   1042?\tIt was due on Monday — «ünïcödé» ✓ and this goes on well past eighty runes of text\n"
	steps := []struct {
		typ  transcript.Type
		data any
		what string
	}{
		{transcript.TypeSessionMode, transcript.SessionMode{ToolMode: transcript.ToolModeAsk}, "a session.mode entry, before any message"},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: question}, "the first user message (the title)"},
		{transcript.TypeAssistantMessage, transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "refund", Arguments: json.RawMessage(`{}`)}}}, "an assistant message with a tool call"},
		{transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "a1", CallID: "c1", Tool: "refund", Arguments: json.RawMessage(`{}`)}, "an approval request (pending approvals rise)"},
		{transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "a1", CallID: "c1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce}, "its decision (pending approvals fall)"},
		{transcript.TypeToolResult, transcript.ToolResult{CallID: "c1", Tool: "refund", Result: "done"}, "a tool result (a message)"},
		{transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "Refunded."}, "the answer"},
		{transcript.TypeTurnEnd, transcript.TurnEnd{}, "a turn end (not a message)"},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "A second question does not change the title"}, "a second user message"},
		{transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "a2", CallID: "c2", Tool: "refund"}, "a second approval request, left pending"},
		{"x.unknown", map[string]any{"text": "not a message"}, "an entry of a type spool does not know"},
	}
	var entries []transcript.Entry
	for i, st := range steps {
		e := NewEntry(Head(entries), start.Add(time.Duration(i)*time.Second), st.typ, st.data)
		appendAll(t, s, key, e)
		entries = append(entries, e)
		checkInfo(t, s, key, entries, "after "+st.what)
	}
	// The reference itself, spelled out, so a failure says which field.
	info := listed(t, s, key)
	want := map[string][2]any{
		"ID":               {info.ID, key.ID},
		"Agent":            {info.Agent, key.Agent},
		"Owner":            {info.Owner, key.Owner},
		"Title":            {info.Title, store.Title(question)},
		"MessageCount":     {info.MessageCount, 5},
		"PendingApprovals": {info.PendingApprovals, 1},
		"Entries":          {info.Entries, len(steps)},
	}
	for field, v := range want {
		if v[0] != v[1] {
			t.Errorf("SessionInfo.%s is %v, want %v", field, v[0], v[1])
		}
	}
	if !strings.HasPrefix(info.Title, "Where is order 1042? It was due") {
		t.Errorf("SessionInfo.Title %q must be the beginning of the first user message on one line", info.Title)
	}
	if !info.Started.Equal(entries[0].Timestamp) {
		t.Errorf("SessionInfo.Started %v must be the first entry's timestamp %v", info.Started, entries[0].Timestamp)
	}
	if !info.LastActivity.Equal(last(entries).Timestamp) {
		t.Errorf("SessionInfo.LastActivity %v must be the newest entry's timestamp %v", info.LastActivity, last(entries).Timestamp)
	}
}

func last(entries []transcript.Entry) transcript.Entry { return entries[len(entries)-1] }

func testInfoClockBack(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	start := base()
	entries := Chain("", start, 1)
	// A second writer whose clock is behind appends the next entries.
	next := Chain(Head(entries), start.Add(10*time.Second), 2)
	next[1] = NewEntry(next[0].ID, start.Add(5*time.Second), transcript.TypeTurnEnd, nil)
	entries = append(entries, next...)
	// Another session whose only entry falls between the two.
	between := ns.Key(name("between"))
	appendAll(t, s, between, NewEntry("", start.Add(7*time.Second), transcript.TypeUserMessage, nil))
	appendAll(t, s, key, entries...)
	checkInfo(t, s, key, entries, "entries whose timestamps go back (LastActivity is the newest timestamp, as storekit.Info keeps it)")
	got := infoIDs(listAll(t, s, ns, 0))
	if want := []string{key.ID, between.ID}; !slices.Equal(got, want) {
		t.Errorf("List must order by LastActivity, the newest timestamp, not by the last entry's: a session with entries at +10s then +5s comes before one at +7s; got %v, want %v", got, want)
	}
	for _, limit := range []int{1, 2} {
		if got := infoIDs(listAll(t, s, ns, limit)); !slices.Equal(got, []string{key.ID, between.ID}) {
			t.Errorf("paging with Limit %d over sessions whose clocks went back shows %v, want each once in order", limit, got)
		}
	}
}

func testInfoNoUserMessage(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	entries := []transcript.Entry{NewEntry("", base(), transcript.TypeSessionMode, transcript.SessionMode{ToolMode: transcript.ToolModeOff})}
	entries = append(entries, NewEntry(Head(entries), base(), "x.unknown", map[string]any{"text": "no title from me"}))
	appendAll(t, s, key, entries...)
	checkInfo(t, s, key, entries, "a session without a user message (no title, no messages)")
}

func testDelete(t *testing.T, s store.Store) {
	ns := store.Namespace{Agent: name("agent"), Owner: name("owner")}
	key := ns.Key(name("sess"))
	start := base()
	old := []transcript.Entry{NewEntry("", start, transcript.TypeUserMessage, transcript.UserMessage{Text: "old title"})}
	old = append(old, NewEntry(Head(old), start.Add(time.Second), transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "a1", CallID: "c1", Tool: "t"}))
	old = append(old, Chain(Head(old), start.Add(2*time.Second), 4)...)
	appendAll(t, s, key, old...)
	keep := ns.Key(name("keep"))
	kept := seed(t, s, keep, start, 2)

	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete %s: %v", key, err)
	}
	checkRead(t, s, key, nil, "after Delete, the session reads empty")
	checkRead(t, s, keep, kept, "Delete removes only its own session")
	if _, n := find(listAll(t, s, ns, 0), key.ID); n != 0 {
		t.Errorf("after Delete, List still shows the session (%d times)", n)
	}
	if _, n := find(listAll(t, s, ns, 0), keep.ID); n != 1 {
		t.Errorf("Delete of another session removed %s from the listing", keep.ID)
	}
	if st, ok := s.(store.Stater); ok {
		if _, err := st.Stat(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after Delete, Stat must fail with ErrNotFound; got %v", err)
		}
	}
	expectConflict(t, s, key, NewEntry(Head(old), start.Add(time.Minute), transcript.TypeUserMessage, nil),
		"after Delete, an entry whose parent is the deleted session's last entry")

	fresh := []transcript.Entry{NewEntry("", start.Add(time.Minute), transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "no user message yet"})}
	appendAll(t, s, key, fresh...)
	checkRead(t, s, key, fresh, "after Delete, the same id starts empty and nothing of the old session comes back")
	checkInfo(t, s, key, fresh, "after Delete and a new first entry (no old title, counts or approvals)")
	fresh = append(fresh, NewEntry(Head(fresh), start.Add(2*time.Minute), transcript.TypeUserMessage, transcript.UserMessage{Text: "new title"}))
	appendAll(t, s, key, fresh[1])
	checkInfo(t, s, key, fresh, "after Delete, the new session's title is its own first user message")
	checkRead(t, s, key, fresh, "after Delete and two appends")
}

func testDeleteUnknown(t *testing.T, s store.Store) {
	ns := newNamespace()
	key := ns.Key(name("sess"))
	seed(t, s, key, base(), 2)
	for _, k := range []store.Key{ns.Key(name("never")), {Agent: name("agent"), ID: key.ID}, {Agent: ns.Agent, Owner: name("owner"), ID: key.ID}} {
		if err := s.Delete(t.Context(), k); err != nil {
			t.Errorf("Delete of a session the store does not have (%s) must not be an error; got %v", k, err)
		}
	}
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete %s: %v", key, err)
	}
	if err := s.Delete(t.Context(), key); err != nil {
		t.Errorf("Delete of a session already deleted must not be an error; got %v", err)
	}
}

// testInfoRename checks that a session.title entry (a rename) is the
// title from then on, replacing the one of the first user message, that
// the newest rename wins, and that a blank one changes nothing; and that
// a first message of nothing but a command line leaves the title to the
// next user message.
func testInfoRename(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	start := base()
	steps := []struct {
		typ   transcript.Type
		data  any
		title string
	}{
		{transcript.TypeUserMessage, transcript.UserMessage{Text: `/call save_note {"text":"milk"}`}, ""},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "What is on my list?"}, "What is on my list?"},
		{transcript.TypeSessionTitle, transcript.SessionTitle{Title: "  Groceries\nfor the week "}, "Groceries for the week"},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "Another question"}, "Groceries for the week"},
		{transcript.TypeSessionTitle, transcript.SessionTitle{Title: " \t "}, "Groceries for the week"},
		{transcript.TypeSessionTitle, transcript.SessionTitle{Title: "Shopping"}, "Shopping"},
	}
	var entries []transcript.Entry
	for i, st := range steps {
		e := NewEntry(Head(entries), start.Add(time.Duration(i)*time.Second), st.typ, st.data)
		appendAll(t, s, key, e)
		entries = append(entries, e)
		checkInfo(t, s, key, entries, "after step "+strconv.Itoa(i+1))
		if got := listed(t, s, key).Title; got != st.title {
			t.Errorf("after step %d (%s), the title is %q, want %q", i+1, st.typ, got, st.title)
		}
	}
}

// testInfoCompactions checks that List and Stat count a session's
// session.compaction entries (a rolling one too), and not a message that
// only names the type.
func testInfoCompactions(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	start := base()
	compaction := transcript.Compaction{Summary: "The user asked about orders.", FirstTurn: "t1", LastTurn: "t1", Turns: 1}
	rolling := compaction
	rolling.LastTurn, rolling.Turns = "t2", 2
	steps := []struct {
		typ  transcript.Type
		data any
		want int
	}{
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "What is a " + string(transcript.TypeCompaction) + " entry?"}, 0},
		{transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "A summary."}, 0},
		{transcript.TypeCompaction, compaction, 1},
		{transcript.TypeUserMessage, transcript.UserMessage{Text: "And then?"}, 1},
		{transcript.TypeCompaction, rolling, 2},
	}
	var entries []transcript.Entry
	for i, st := range steps {
		e := NewEntry(Head(entries), start.Add(time.Duration(i)*time.Second), st.typ, st.data)
		appendAll(t, s, key, e)
		entries = append(entries, e)
		checkInfo(t, s, key, entries, "after step "+strconv.Itoa(i+1))
		if got := listed(t, s, key).Compactions; got != st.want {
			t.Errorf("after step %d (%s), List counts %d compactions, want %d", i+1, st.typ, got, st.want)
		}
	}
}
