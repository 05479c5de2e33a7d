package spool_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// A consumer whose loop body panics stops the turn early: the panic is
// its own and goes on up to it, and the turn is recorded cancelled, as
// when a consumer breaks out of the loop. The session's next call runs
// at once, also on a store without a lock, where an open turn is
// another process's to wait for.
func TestConsumerPanicRecordsCancelled(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Store: plainStore{memstore.New()}, BusyTimeout: 200 * time.Millisecond})
	s := session(t, a, ctx, "s")
	func() {
		defer func() {
			if p := recover(); p != "mine" {
				t.Fatalf("recovered %v, want the consumer's own panic", p)
			}
		}()
		for ev := range s.Stream(ctx, "hello") {
			if ev.Kind == spool.EventText {
				panic("mine")
			}
		}
	}()
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	if last := entries[len(entries)-1]; last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("after the consumer's panic the transcript is %v, the last entry %s; want the turn's end, cancelled", types(entries), last.Status)
	}
	if res, err := s.Send(ctx, "again"); err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
}

// The turn a consumer's panic ends is observed to end, and so is what it
// was doing: the model call whose text the loop body took, and the
// delegating tool call on whose event it panicked. An observer that opens
// a span per start (package telemetry) would otherwise hold it for good.
func TestConsumerPanicObservationsPair(t *testing.T) {
	for _, c := range []struct {
		name   string
		prompt string
		at     spool.EventKind
	}{
		{"model", "hello", spool.EventText},
		{"tool", `/call ask_researcher {"prompt":"find order 7"}`, spool.EventDelegate},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			var mu sync.Mutex
			open := map[string]bool{}
			obs := spool.ObserverFunc(func(_ context.Context, o spool.Observation) {
				mu.Lock()
				defer mu.Unlock()
				key := string(o.Kind[:strings.IndexByte(string(o.Kind), '.')+1]) + o.TurnID + "/" + o.CallID
				switch o.Kind {
				case spool.ObserveTurnStart, spool.ObserveModelStart, spool.ObserveToolStart:
					open[key] = true
				case spool.ObserveTurnEnd, spool.ObserveModelEnd, spool.ObserveToolEnd:
					delete(open, key)
				}
			})
			st := memstore.New()
			helper := newAgent(t, spool.Config{Name: "researcher", Store: st})
			lead := newAgent(t, spool.Config{Name: "lead", Store: st, Observers: []spool.Observer{obs},
				Tools: []*tool.Tool{helper.AsTool("ask_researcher", "Ask the researcher.")}})
			s := session(t, lead, ctx, "s")
			func() {
				defer func() {
					if p := recover(); p != "mine" {
						t.Fatalf("recovered %v, want the consumer's own panic", p)
					}
				}()
				for ev := range s.Stream(ctx, c.prompt) {
					if ev.Kind == c.at {
						panic("mine")
					}
				}
			}()
			mu.Lock()
			defer mu.Unlock()
			if len(open) != 0 {
				t.Fatalf("observed starts without an end: %v", open)
			}
		})
	}
}
