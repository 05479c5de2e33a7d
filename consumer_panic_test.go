package spool_test

import (
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
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
