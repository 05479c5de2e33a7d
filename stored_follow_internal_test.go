package spool

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// A follower through the transcript (a store without notifications)
// that had its own process's run live goes on from where that run's
// entries end: a run of another process that began before the follower
// looked again is yielded, not skipped (it went on from the
// transcript's end by then, past that run). The other process's turn
// runs inside the follower's loop body, at the first run's end.
func TestStoredFollowAfterLocalRun(t *testing.T) {
	mem := memstore.New()
	st := struct{ store.Store }{mem} // no notifications
	p, _ := New(Config{Store: st, Model: echo.New()})
	q, _ := New(Config{Store: st, Model: echo.New()})
	sp, _ := p.Session(t.Context(), "s")
	sq, _ := q.Session(t.Context(), "s")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	ready := make(chan struct{})
	var ends []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range sp.Watch(ctx, WatchOptions{Follow: true, Ready: func() { close(ready) }}) {
			if err != nil {
				t.Error(err)
				return
			}
			if ev.Kind != EventTurnEnd {
				continue
			}
			if ends = append(ends, ev.Result.Text); len(ends) == 2 {
				return
			}
			if _, err := sq.Send(t.Context(), "from q"); err != nil {
				t.Error(err)
			}
		}
	}()
	<-ready
	if _, err := sp.Send(t.Context(), "from p"); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(ends) != 2 || ends[1] != "echo: from q" {
		t.Fatalf("turn ends %q, want p's then q's", ends)
	}
}
