package spool

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// idlessCalls answers the first request with its calls, which have no
// id (a model of the caller's, or a server that streams none), and every
// later one with "done".
type idlessCalls struct {
	calls []transcript.ToolCall
	n     atomic.Int32
}

func (m *idlessCalls) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if m.n.Add(1) > 1 {
			yield(model.Event{Kind: model.EventText, Text: "done"}, nil)
			return
		}
		for _, c := range m.calls {
			if !yield(model.Event{Kind: model.EventToolCall, ToolCall: c}, nil) {
				return
			}
		}
	}
}

// idlessRun runs calls (which need approval) on a new session of an agent
// of its own, and returns the session, the events the run streamed, and
// a function that decides the pending approval of the given arguments
// and returns the events of the run it resumes.
func idlessRun(t *testing.T, calls ...transcript.ToolCall) (*Session, []string, func(args string, d Decision) []string) {
	t.Helper()
	ctx := t.Context()
	var tools []*tool.Tool
	for _, name := range []string{"save", "send"} {
		tools = append(tools, tool.New(name, "Save or send a note.", func(ctx context.Context, a struct{ Text string }) (string, error) {
			return name + ": " + a.Text, nil
		}, tool.RequireApproval()))
	}
	a, err := New(Config{Store: memstore.New(), Model: &idlessCalls{calls: calls}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Session(ctx, "idless")
	if err != nil {
		t.Fatal(err)
	}
	live := callEvents(t, s.Stream(ctx, "save milk and eggs"))
	decide := func(args string, d Decision) []string {
		t.Helper()
		var id string
		_ = s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
			for _, p := range sl.st.pending {
				if string(p.Arguments) == args {
					id = p.ID
				}
			}
			return nil
		})
		if id == "" {
			t.Fatalf("no approval of %s waits", args)
		}
		return callEvents(t, s.Resolve(ctx, id, d))
	}
	return s, live, decide
}

// storedCallEvents is what a watcher reads of s back from the transcript.
func storedCallEvents(t *testing.T, s *Session) []string {
	t.Helper()
	_, total, err := store.ReadTail(t.Context(), s.a.cfg.Store, s.key, 1)
	if err != nil {
		t.Fatal(err)
	}
	return callEvents(t, func(yield func(Event, error) bool) {
		s.watchStored(t.Context(), stored{until: int64(total)}, false, yield)
	})
}

// callEvents describes the events of a turn as a watcher pairs calls
// with them: each event's kind and the call it names (its callId and its
// arguments or result), and for a turn's end (or pause) its status and
// the approvals it waits on.
func callEvents(t *testing.T, seq iter.Seq2[Event, error]) []string {
	t.Helper()
	var out []string
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case EventToolCall:
			out = append(out, fmt.Sprintf("tool_call %q %s", ev.ToolCall.ID, ev.ToolCall.Arguments))
		case EventApprovalRequest:
			out = append(out, fmt.Sprintf("approval_request %q %s", ev.Approval.CallID, ev.Approval.Arguments))
		case EventToolResult:
			out = append(out, fmt.Sprintf("tool_result %q %s", ev.ToolResult.CallID, ev.ToolResult.Result))
		case EventTurnEnd:
			s := "turn_end " + string(ev.Result.Status)
			for _, p := range ev.Result.Pending {
				s += fmt.Sprintf(" [%q %s]", p.CallID, p.Arguments)
			}
			out = append(out, s)
		case EventTurnStart:
			out = append(out, "turn_start")
		}
	}
	return out
}

// TestWatchStoredIDlessCallsDecidedOutOfOrder: two calls without an id of
// one tool wait on approvals; the second is denied first, then the first
// allowed. A watcher reading the run back from the transcript gets the
// events the running process streamed: the same calls, approval requests
// and results in the same order, each naming its call as the live one
// does, and the pause after both requests, waiting on both. (The
// transcript's watch counted the calls of a step by their ids, so the two
// without one were one: it paused after the first request, waiting on it
// alone, and the second came after the pause.)
func TestWatchStoredIDlessCallsDecidedOutOfOrder(t *testing.T) {
	s, live, decide := idlessRun(t,
		transcript.ToolCall{Name: "save", Arguments: []byte(`{"Text":"milk"}`)},
		transcript.ToolCall{Name: "save", Arguments: []byte(`{"Text":"eggs"}`)})
	live = append(live, decide(`{"Text":"eggs"}`, Decision{Reason: "no eggs"})...)
	live = append(live, decide(`{"Text":"milk"}`, Decision{Allow: true})...)
	want := []string{
		"turn_start",
		`tool_call "" {"Text":"milk"}`,
		`tool_call "" {"Text":"eggs"}`,
		`approval_request "" {"Text":"milk"}`,
		`approval_request "" {"Text":"eggs"}`,
		`turn_end awaiting_approval ["" {"Text":"milk"}] ["" {"Text":"eggs"}]`,
		"turn_start",
		`tool_result "" the user denied this call: no eggs`,
		`turn_end awaiting_approval ["" {"Text":"milk"}]`,
		"turn_start",
		`tool_result "" save: milk`,
		"turn_end ok",
	}
	sameLiveAndStored(t, s, live, want)
}

// TestWatchStoredIDlessCallsAllowedForTheSession: of three calls without
// an id waiting on approvals, the first is allowed for the session, which
// runs the other of its tool too; the turn pauses again after both
// results, on the call of the other tool, in the transcript's watch as
// in the run.
func TestWatchStoredIDlessCallsAllowedForTheSession(t *testing.T) {
	s, live, decide := idlessRun(t,
		transcript.ToolCall{Name: "save", Arguments: []byte(`{"Text":"milk"}`)},
		transcript.ToolCall{Name: "send", Arguments: []byte(`{"Text":"bread"}`)},
		transcript.ToolCall{Name: "save", Arguments: []byte(`{"Text":"eggs"}`)})
	live = append(live, decide(`{"Text":"milk"}`, Decision{Allow: true, Scope: transcript.ApprovalScopeSession})...)
	live = append(live, decide(`{"Text":"bread"}`, Decision{Allow: true})...)
	want := []string{
		"turn_start",
		`tool_call "" {"Text":"milk"}`,
		`tool_call "" {"Text":"bread"}`,
		`tool_call "" {"Text":"eggs"}`,
		`approval_request "" {"Text":"milk"}`,
		`approval_request "" {"Text":"bread"}`,
		`approval_request "" {"Text":"eggs"}`,
		`turn_end awaiting_approval ["" {"Text":"milk"}] ["" {"Text":"bread"}] ["" {"Text":"eggs"}]`,
		"turn_start",
		`tool_result "" save: milk`,
		`tool_result "" save: eggs`,
		`turn_end awaiting_approval ["" {"Text":"bread"}]`,
		"turn_start",
		`tool_result "" send: bread`,
		"turn_end ok",
	}
	sameLiveAndStored(t, s, live, want)
}

// sameLiveAndStored checks that the run's live events are want but for
// the ids the runtime gave its calls (want names none), that a watcher
// reading the run back from s's transcript gets them, and that one
// reading the same transcript recorded without call ids (as spool
// recorded a model's calls without one before it gave them ids, and as
// other programs may) gets them without the ids.
func sameLiveAndStored(t *testing.T, s *Session, live, want []string) {
	t.Helper()
	if got := blankCallIDs(t, live); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("live events, call ids blanked:\n got %q\nwant %q", got, want)
	}
	if got := storedCallEvents(t, s); fmt.Sprint(got) != fmt.Sprint(live) {
		t.Fatalf("events read from the transcript:\n got %q\nwant %q (live)", got, live)
	}
	if got := storedCallEvents(t, recordedWithoutIDs(t, s)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events read from the transcript recorded without call ids:\n got %q\nwant %q", got, want)
	}
}

// callIDs are the ids the runtime gives calls a model streamed without
// one.
var callIDs = regexp.MustCompile(`"call_[A-Z0-9]+"`)

// blankCallIDs is events with the call ids the runtime gave left out.
func blankCallIDs(t *testing.T, events []string) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, ev := range events {
		if strings.Contains(ev, `""`) {
			t.Fatalf("a live event names a call without an id: %s", ev)
		}
		out[i] = callIDs.ReplaceAllString(ev, `""`)
	}
	return out
}

// recordedWithoutIDs returns a session, on a store of its own, whose
// transcript is s's with every call id left out: the calls' ids, and the
// callId of their approval requests, decisions and results.
func recordedWithoutIDs(t *testing.T, s *Session) *Session {
	t.Helper()
	ctx := t.Context()
	entries, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mem := memstore.New()
	for _, e := range entries {
		var v any
		switch e.Type {
		case transcript.TypeAssistantMessage:
			var d transcript.AssistantMessage
			mustDecode(t, e, &d)
			for i := range d.ToolCalls {
				d.ToolCalls[i].ID = ""
			}
			v = d
		case transcript.TypeApprovalRequest:
			var d transcript.ApprovalRequest
			mustDecode(t, e, &d)
			d.CallID = ""
			v = d
		case transcript.TypeApprovalDecision:
			var d transcript.ApprovalDecision
			mustDecode(t, e, &d)
			d.CallID = ""
			v = d
		case transcript.TypeToolResult:
			var d transcript.ToolResult
			mustDecode(t, e, &d)
			d.CallID = ""
			v = d
		}
		if v != nil {
			if e.Data, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := mem.Append(ctx, s.key, e); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(Config{Name: s.key.Agent, Store: mem, Model: &idlessCalls{}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := a.Session(ctx, s.key.ID)
	if err != nil {
		t.Fatal(err)
	}
	return bare
}

func mustDecode(t *testing.T, e transcript.Entry, v any) {
	t.Helper()
	if err := e.DecodeData(v); err != nil {
		t.Fatal(err)
	}
}
