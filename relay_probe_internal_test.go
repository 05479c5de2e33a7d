package spool

import (
	"context"
	"encoding/json"
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

// answers, asked by a Stop from another process whether the turn open
// in the transcript still runs somewhere, takes the answer of a run of
// that turn, not the closed snap of an earlier turn's run that a process
// still keeps: that snap says nothing of the turn asked about. It took
// the first snap, so a Stop whose stop notification was lost took a live
// turn for dead, did not send the stop again, and waited for the turn to
// end by itself.
func TestAnswersIsTheOpenTurns(t *testing.T) {
	relayWaits(t, 2*time.Second, 100*time.Millisecond)
	ctx := t.Context()
	mem := memstore.New()
	a, err := New(Config{Model: echo.New(), Store: &basicNotifier{mem: mem}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.Session(ctx, "s")
	heard, err := store.Listen(ctx, a.cfg.Store, s.key)
	if err != nil {
		t.Fatal(err)
	}
	const from = 4 // where the open turn's runs begin
	for _, c := range []struct {
		name  string
		snaps []relayMsg // answering the sync, in order
		want  bool
	}{
		{"an earlier turn's process answers first", []relayMsg{{Pos: 2}, {Pos: from, Open: true}}, true},
		{"the turn's run ended", []relayMsg{{Pos: 2}, {Pos: from + 3}}, false},
		{"only an earlier turn's process answers", []relayMsg{{Pos: 2}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := make(chan bool, 1)
			go func() {
				alive, err := s.answers(ctx, from)
				if err != nil {
					t.Error(err)
				}
				got <- alive
			}()
			var sync relayMsg
			for sync.T != "sync" {
				if err := json.Unmarshal(<-heard, &sync); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range c.snaps {
				m.T, m.Nonce = "snap", sync.Nonce
				if err := a.notify(ctx, s.key, m); err != nil {
					t.Fatal(err)
				}
			}
			if alive := <-got; alive != c.want {
				t.Fatalf("answers: %v, want %v", alive, c.want)
			}
		})
	}
}
