package spool_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// endsOf returns the Results of the turn_end events (ends and pauses) a
// watch of s after after yields.
func endsOf(t *testing.T, s *spool.Session, after string) []*spool.Result {
	t.Helper()
	id, err := spool.ParseEventID(after)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var out []*spool.Result
	for ev, err := range s.Watch(ctx, spool.WatchOptions{After: id}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventTurnEnd {
			out = append(out, ev.Result)
		}
	}
	return out
}

// TestStoredWatchSupersedes: a watcher that follows a regenerate or an
// edit through the transcript (another process, on a store without
// notifications) gets the turn's end naming the turns it replaced, as a
// watcher of the live run does (Result.Supersedes): a view that shows the
// conversation reloads it on that, rather than show the replaced answer
// and its replacement one after the other. The pause of a replacing turn
// names them too, and the run that an approval resumes names none, live
// or stored.
func TestStoredWatchSupersedes(t *testing.T) {
	ctx := t.Context()
	st := plainStore{memstore.New()} // no notifications: the other process reads the transcript
	danger := tool.New("danger", "d", func(context.Context, struct{}) (string, error) { return "done", nil }, tool.RequireApproval())
	a := newAgent(t, spool.Config{Store: st, Tools: []*tool.Tool{danger}})
	other := session(t, newAgent(t, spool.Config{Store: st, Tools: []*tool.Tool{danger}}), ctx, "w")
	s := session(t, a, ctx, "w")
	first, err := s.Send(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Send(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, live []spool.Event, want [][]string) {
		t.Helper()
		// After the run's first event: the other process reads the run
		// from its first entry (its marker).
		for _, after := range []string{live[0].ID} {
			ends := endsOf(t, other, after)
			if len(ends) != len(want) {
				t.Fatalf("%s: the stored watch after %s yields %d turn ends, want %d", what, after, len(ends), len(want))
			}
			for i, r := range ends {
				if !slices.Equal(r.Supersedes, want[i]) {
					t.Errorf("%s: the stored turn end %d (%s) names %v as replaced, want %v (as the live run: %v)", what, i, r.Status, r.Supersedes, want[i], live[len(live)-1].Result.Supersedes)
				}
			}
		}
	}
	events := func(seq func(func(spool.Event, error) bool)) []spool.Event {
		var out []spool.Event
		for ev, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
		return out
	}
	live := events(s.RegenerateStream(ctx))
	check("regenerate", live, [][]string{{second.TurnID}})
	regen := live[len(live)-1].Result.TurnID
	live = events(s.EditStream(ctx, first.TurnID, "/call danger {}"))
	if r := live[len(live)-1].Result; r.Status != spool.StatusAwaitingApproval || !slices.Equal(r.Supersedes, []string{first.TurnID, regen}) {
		t.Fatalf("the edit paused with %+v", r)
	}
	check("edit, paused", live, [][]string{{first.TurnID, regen}})
	p, _ := s.PendingApprovals(ctx)
	resumed := events(s.Resolve(ctx, p[0].ID, spool.Decision{Allow: true}))
	if r := resumed[len(resumed)-1].Result; r.Status != transcript.StatusOK || r.Supersedes != nil {
		t.Fatalf("the resumed run ended with %+v", r)
	}
	check("edit, resumed", resumed, [][]string{nil})
}
