package spool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// leadSession returns the agent "researcher" and session case-1 of an
// agent "lead" whose tool ask_researcher delegates to it, both on st.
func leadSession(t *testing.T, ctx context.Context, st store.Store) (*spool.Agent, *spool.Session) {
	helper := newAgent(t, spool.Config{Name: "researcher", Store: st})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{
		helper.AsTool("ask_researcher", "Ask the researcher."),
	}})
	return helper, session(t, lead, ctx, "case-1")
}

func TestDelegation(t *testing.T) {
	ctx := t.Context()
	helper, s := leadSession(t, ctx, memstore.New())
	dlg := spool.DelegateSessionID(s.Key())
	var delegated []spool.Event
	var end *spool.Result
	for ev, err := range s.Stream(ctx, `/call ask_researcher {"prompt":"find order 7"}`) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case spool.EventDelegate:
			if ev.Delegate.Agent != "researcher" || ev.Delegate.SessionID != dlg || ev.Delegate.CallID == "" {
				t.Fatalf("delegate event %+v, want it from researcher's session %s with the caller's call id", ev.Delegate, dlg)
			}
			delegated = append(delegated, *ev.Delegate.Event)
		case spool.EventTurnEnd:
			end = ev.Result
		}
	}
	if len(delegated) == 0 || delegated[len(delegated)-1].Kind != spool.EventTurnEnd {
		t.Fatalf("delegate events %+v, want them ending with the delegate's turn end", delegated)
	}
	if end.Status != transcript.StatusOK || !strings.Contains(end.Text, "echo: find order 7") {
		t.Fatalf("lead result %+v, want ok with the delegate's answer", end)
	}
	// The delegate's own session holds its turn; the lead's transcript
	// links to it.
	rs, err := helper.OpenSession(ctx, dlg)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := rs.Messages(ctx, 0)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "find order 7" {
		t.Fatalf("the delegate session's messages = %+v, %v; want the prompt and its answer", msgs, err)
	}
	entries, _ := s.Transcript(ctx)
	for _, e := range entries {
		if e.Type == transcript.TypeToolResult {
			var r transcript.ToolResult
			_ = e.DecodeData(&r)
			var d spool.DelegateResult
			if err := json.Unmarshal([]byte(r.Result), &d); err != nil || d.SessionID != dlg || d.Agent != "researcher" {
				t.Fatalf("tool result does not link the delegate session: %s (%v)", r.Result, err)
			}
			return
		}
	}
	t.Fatal("no tool result")
}

// TestDelegateSessionsNeverShared: two callers (users, agents, sessions)
// never reach the same delegate session, so nothing one delegated reaches
// the other's history.
func TestDelegateSessionsNeverShared(t *testing.T) {
	keys := []store.Key{
		{Agent: "lead", ID: "http"},
		{Agent: "lead", Owner: "alice", ID: "http"},
		{Agent: "lead", Owner: "bob", ID: "http"},
		{Agent: "other", ID: "http"},
		{Agent: "lead", ID: "http2"},
	}
	seen := map[string]store.Key{}
	for _, k := range keys {
		id := spool.DelegateSessionID(k)
		if !store.ValidID(id) {
			t.Fatalf("%q is not a valid session id", id)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("%v and %v share delegate session %s, want one each", prev, k, id)
		}
		seen[id] = k
	}
	ctx := t.Context()
	st := memstore.New()
	helper := newAgent(t, spool.Config{Name: "researcher", Store: st})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Scope: spool.ScopeUser, ToolMode: transcript.ToolModeAuto,
		Tools: []*tool.Tool{helper.AsTool("ask", "Ask.")}})
	for _, u := range []string{"alice", "bob"} {
		uctx := spool.ContextWithUser(ctx, u)
		s := session(t, lead, uctx, "http")
		if _, err := s.Send(uctx, `/call ask {"prompt":"`+u+` secret"}`); err != nil {
			t.Fatal(err)
		}
	}
	bobKey := store.Key{Agent: "lead", Owner: "bob", ID: "http"}
	rs, err := helper.OpenSession(ctx, spool.DelegateSessionID(bobKey))
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := rs.Messages(ctx, 0)
	for _, m := range msgs {
		if strings.Contains(m.Text, "alice") {
			t.Fatalf("bob's delegate session holds alice's message: %+v, want his own only", msgs)
		}
	}
}

// A delegate that outlives its call's timeout sends nothing more into the
// caller's stream (run with -race).
func TestTimedOutDelegateIsSilent(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	slow := newAgent(t, spool.Config{Name: "slow", Store: st, Model: echo.New(echo.WithDelay(30 * time.Millisecond))})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, ToolMode: transcript.ToolModeAuto,
		Tools: []*tool.Tool{slow.AsTool("ask_slow", "Ask.", tool.WithTimeout(50*time.Millisecond))}})
	s := session(t, lead, ctx, "t")
	var end *spool.Result
	for ev, err := range s.Stream(ctx, `/call ask_slow {"prompt":"one two three four five six seven eight"}`) {
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // a slow consumer
		if ev.Kind == spool.EventTurnEnd {
			end = ev.Result
		}
	}
	if end == nil || !strings.Contains(end.Text, "timed out") {
		t.Fatalf("the caller's turn end = %+v, want its model told the delegate timed out", end)
	}
	time.Sleep(300 * time.Millisecond) // let the abandoned delegate finish
}

// A delegate whose answer its provider stopped short tells the caller's
// model so: its result carries the notice. It said only ok and the text,
// so the caller's model took part of an answer for all of it.
func TestDelegateSaysItsAnswerIsIncomplete(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	helper := newAgent(t, spool.Config{Name: "researcher", Store: st, Model: stoppingModel{model.StopLength}})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{helper.AsTool("ask", "Ask.")}})
	s := session(t, lead, ctx, "case-1")
	if _, err := s.Send(ctx, `/call ask {"prompt":"a long report"}`); err != nil {
		t.Fatal(err)
	}
	entries, _ := s.Transcript(ctx)
	for _, e := range entries {
		if e.Type == transcript.TypeToolResult {
			var r transcript.ToolResult
			_ = e.DecodeData(&r)
			var d map[string]any
			if err := json.Unmarshal([]byte(r.Result), &d); err != nil || d["status"] != "ok" || d["text"] != "the first half of" || !strings.Contains(fmt.Sprint(d["notice"]), "output token limit") {
				t.Fatalf("delegate result %s (%v); want ok, the text, and the notice", r.Result, err)
			}
			return
		}
	}
	t.Fatal("no tool result")
}

// A panic of the consumer's loop body on a delegate's event is the
// consumer's own (panic.go), as on any other event: it goes on up to the
// consumer, not into the calling model's tool result.
func TestConsumerPanicOnDelegateEventIsTheConsumers(t *testing.T) {
	ctx := t.Context()
	_, s := leadSession(t, ctx, memstore.New())
	func() {
		defer func() {
			if p := recover(); p != "mine" {
				t.Fatalf("recovered %v, want the consumer's own panic", p)
			}
		}()
		for ev := range s.Stream(ctx, `/call ask_researcher {"prompt":"find order 7"}`) {
			if ev.Kind == spool.EventDelegate {
				panic("mine")
			}
		}
		t.Fatal("no panic")
	}()
	// The turn is recorded cancelled, with no tool result: the panic was
	// never the tool's.
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	for _, e := range entries {
		if e.Type == transcript.TypeToolResult {
			t.Fatalf("a tool result was recorded: %s", e.Data)
		}
	}
	if last := entries[len(entries)-1]; last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("the transcript is %v, the last entry %s; want the turn's end, cancelled", types(entries), last.Status)
	}
}
