package spool

import (
	"context"
	"testing"

	"github.com/spool-go/spool/store"
)

// A watcher waiting for its run's next events, woken both by them and by
// its context ending, yields them before it ends: Server.Close ends its
// followers once every turn has ended and promises them those turns'
// last events. Go's select picks either case at random, so the check
// runs many times.
func TestFollowYieldsWhatCameBeforeTheEnd(t *testing.T) {
	key := store.Key{Agent: "default", ID: "w"}
	for i := range 64 {
		h := newLiveHub(0, 0)
		run, _ := h.begin(key, "t1", 0, func() {})
		run.add(&Event{Kind: EventTurnStart}, 0)
		ctx, cancel := context.WithCancel(context.Background())
		var got []EventKind
		var s *Session // follow reads only its run
		_, ok := s.follow(ctx, run, 0, func(ev Event, _ error) bool {
			got = append(got, ev.Kind)
			if ev.Kind == EventTurnStart {
				// Both wake the watcher before it waits again.
				run.add(&Event{Kind: EventTurnEnd}, 0)
				h.finish(run, false)
				cancel()
			}
			return true
		})
		if !ok || len(got) != 2 || got[1] != EventTurnEnd {
			t.Fatalf("round %d: the watcher had %v (went on: %v), not the run's start and end", i, got, ok)
		}
	}
}

// A watcher whose context ended is not kept by a run that goes on
// publishing as fast as it reads: it has what was published before the
// end, one pass, and stops.
func TestFollowEndsWithItsContext(t *testing.T) {
	key := store.Key{Agent: "default", ID: "w"}
	h := newLiveHub(0, 0)
	run, _ := h.begin(key, "t1", 0, func() {})
	run.add(&Event{Kind: EventTurnStart}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	after := 0
	var s *Session
	s.follow(ctx, run, 0, func(ev Event, _ error) bool {
		if ctx.Err() != nil {
			after++
		}
		cancel()
		if after < 1000 {
			run.add(&Event{Kind: EventText}, 0) // the run goes on
		}
		return true
	})
	if after > 2 {
		t.Fatalf("the watcher read %d events after its context ended", after)
	}
}
