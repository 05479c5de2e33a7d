package spool

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/store/memstore"
)

// A watcher without an id and without Follow, in a process that runs no
// turn of the session, while B runs in another process and the process
// that ran A (ended, still kept) answers its sync first: the watch
// yields B, the run in progress, not nothing (A's answer, a run that
// ended, is no reason to end when another process runs one).
func TestRelayWatchSkipsEndedRunsAnswer(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	ctx := t.Context()
	mem := memstore.New()
	gate := make(chan struct{})
	p1, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: numberedModel{}})
	p2, _ := New(Config{Store: slowSnaps{&basicNotifier{mem: mem}}, Model: gatedModel{gate}})
	p3, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: numberedModel{}})
	s1, _ := p1.Session(ctx, "s")
	streamAll(t, s1, "hi")
	s2, _ := p2.Session(ctx, "s")
	resB := make(chan *Result, 1)
	go func() {
		res, err := s2.Send(ctx, "again")
		if err != nil {
			t.Error(err)
		}
		resB <- res
	}()
	untilRunning(s2) // B runs, waiting on the gate after "hello wor"
	s3, _ := p3.Session(ctx, "s")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	time.AfterFunc(500*time.Millisecond, func() { close(gate) })
	var got []Event
	for ev, err := range s3.Watch(wctx, WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	b := <-resB
	if textOf(got) != b.Text || len(got) == 0 || got[len(got)-1].Kind != EventTurnEnd {
		t.Fatalf("watch without an id while B runs elsewhere: %d events, text %q, want B's %q to its end", len(got), textOf(got), b.Text)
	}
}
