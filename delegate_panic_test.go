package spool_test

import (
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// A panic of the consumer's loop body on a delegate's event is the
// consumer's own (panic.go), as on any other event: it goes on up to the
// consumer, not into the calling model's tool result.
func TestConsumerPanicOnDelegateEventIsTheConsumers(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	helper := newAgent(t, spool.Config{Name: "researcher", Store: st})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{
		helper.AsTool("ask_researcher", "Ask the researcher."),
	}})
	s := session(t, lead, ctx, "case-1")
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
