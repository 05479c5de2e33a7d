package spool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

func TestDelegation(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	helper := newAgent(t, spool.Config{Name: "researcher", Store: st})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{
		helper.AsTool("ask_researcher", "Ask the researcher."),
	}})
	s, _ := lead.Session(ctx, "case-1")
	var delegated []spool.Event
	var end *spool.Result
	for ev, err := range s.Stream(ctx, `/call ask_researcher {"prompt":"find order 7"}`) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case spool.EventDelegate:
			if ev.Delegate.Agent != "researcher" || ev.Delegate.SessionID != "case-1" || ev.Delegate.CallID == "" {
				t.Fatalf("delegate event %+v", ev.Delegate)
			}
			delegated = append(delegated, *ev.Delegate.Event)
		case spool.EventTurnEnd:
			end = ev.Result
		}
	}
	if len(delegated) == 0 || delegated[len(delegated)-1].Kind != spool.EventTurnEnd {
		t.Fatalf("delegate events %+v", delegated)
	}
	if end.Status != transcript.StatusOK || !strings.Contains(end.Text, "echo: find order 7") {
		t.Fatalf("lead result %+v", end)
	}
	// The delegate's own session holds its turn; the lead's transcript
	// links to it.
	rs, err := helper.OpenSession(ctx, "case-1")
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := rs.Messages(ctx, 0)
	if len(msgs) != 2 || msgs[0].Text != "find order 7" {
		t.Fatalf("delegate session %+v", msgs)
	}
	entries, _ := s.Transcript(ctx)
	for _, e := range entries {
		if e.Type == transcript.TypeToolResult {
			var r transcript.ToolResult
			_ = e.DecodeData(&r)
			var d spool.DelegateResult
			if err := json.Unmarshal([]byte(r.Result), &d); err != nil || d.SessionID != "case-1" || d.Agent != "researcher" {
				t.Fatalf("tool result does not link the delegate session: %s (%v)", r.Result, err)
			}
			return
		}
	}
	t.Fatal("no tool result")
}
