package spool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// killableNotifier is a basicNotifier for a process that can be killed:
// once killed, nothing it notifies or appends reaches the store. It has
// no turn lock of the others' (a killed process's lock dies with its
// connection), so the watcher's replica can close its turn.
type killableNotifier struct {
	basicNotifier
	killed atomic.Bool
}

func (n *killableNotifier) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if n.killed.Load() {
		return nil
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

func (n *killableNotifier) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	if n.killed.Load() {
		return errors.New("killed")
	}
	return n.basicNotifier.Append(ctx, k, e)
}

// Two replicas: turn 1 ran on A, turn 2 runs on B, which is killed in the
// middle of it; a watcher on C follows turn 2. A still keeps turn 1 (it
// ended less than RecentTurn ago, and a run in another process does not
// retire it), so A answers the watcher's probe with a snap of turn 1. That
// answer is not B's: the watcher takes B for gone within probeAfter and
// syncWait and gets turn 2's end from the transcript, cancelled. It used
// to take A's snap for B's answer and wait until A forgot turn 1, up to a
// minute.
func TestProbeAnsweredByOlderRun(t *testing.T) {
	relayWaits(t, 200*time.Millisecond, 100*time.Millisecond)
	ctx := t.Context()
	mem := memstore.New()
	newAgent := func(st store.Store, m Config) *Agent {
		m.Store = st
		a, err := New(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	gate := make(chan struct{}) // never opened: B's turn waits until killed
	bs := &killableNotifier{basicNotifier: basicNotifier{mem: mem}}
	a := newAgent(&lockingNotifier{basicNotifier: basicNotifier{mem: mem}}, Config{Model: echo.New()})
	b := newAgent(bs, Config{Model: gatedModel{gate}})
	c := newAgent(&lockingNotifier{basicNotifier: basicNotifier{mem: mem}}, Config{Model: echo.New()})

	sa, _ := a.Session(ctx, "s")
	if _, err := sa.Send(ctx, "turn one"); err != nil {
		t.Fatal(err)
	}
	sb, _ := b.Session(ctx, "s")
	bctx, stopB := context.WithCancel(ctx)
	bdone := make(chan struct{})
	go func() {
		defer close(bdone)
		for range sb.Stream(bctx, "turn two") {
		}
	}()
	defer func() { stopB(); <-bdone }()
	untilRunning(sb)

	sc, _ := c.Session(ctx, "s")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var (
		text   string
		killed time.Time
		last   Event
	)
	for ev, err := range sc.Watch(wctx, WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
		if ev.Kind == EventText {
			if text += ev.Text; text == "hello wor" && killed.IsZero() {
				bs.killed.Store(true) // kill -9: B says no more
				killed = time.Now()
			}
		}
	}
	if killed.IsZero() {
		t.Fatalf("the watcher got %q of turn two, and its end %+v", text, last)
	}
	took := time.Since(killed)
	if last.Kind != EventTurnEnd || last.Result == nil || last.Result.Status != transcript.StatusCancelled {
		t.Fatalf("%v after B was killed, the watch ended with %s %+v; want turn two's end, cancelled", took, last.Kind, last.Result)
	}
	if took > 5*time.Second {
		t.Fatalf("the watcher took %v to take B for gone (probeAfter %v, syncWait %v)", took, probeAfter, syncWait)
	}
	entries, err := sc.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[len(entries)-1]; e.Type != transcript.TypeTurnEnd || e.Status != transcript.StatusCancelled {
		t.Fatalf("the transcript ends %s %s", e.Type, e.Status)
	}
}
