package spool_test

import (
	"context"
	"io"
	"iter"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore/pgtest"
	"github.com/spool-go/spool/transcript"
)

// heldModel streams "held", then waits for gate before ending its answer.
type heldModel struct{ gate <-chan struct{} }

func (m heldModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.Event{Kind: model.EventText, Text: "held"}, nil) {
			return
		}
		select {
		case <-m.gate:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
		}
	}
}

// A process whose database connections all die in the middle of a turn,
// its session lock with them: another process takes the session at once
// (the lock died with its connection), closes the dead turn and runs its
// own; the first, when its turn goes on, does not write into the other's
// (the conditional append), and its next turn, with the connection back,
// catches up and runs. The transcript stays one chain of ended turns.
func TestConnectionLostMidTurn(t *testing.T) {
	ctx := t.Context()
	u := pgtest.URL(t)
	p, viaProxy := faultnet.New(t, u)
	stA, err := store.Open(ctx, viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stA.(io.Closer).Close() })
	stB, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stB.(io.Closer).Close() })
	gate := make(chan struct{})
	a := newAgent(t, spool.Config{Store: stA, Model: heldModel{gate}})
	b := newAgent(t, spool.Config{Store: stB})
	sa, sb := session(t, a, ctx, "shared"), session(t, b, ctx, "shared")

	errA := make(chan error, 1)
	go func() {
		_, err := sa.Send(ctx, "one")
		errA <- err
	}()
	key := sa.Key()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		entries, err := stB.Read(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first turn's prompt never reached the store")
		}
	}
	p.Cut()

	bctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if res, err := sb.Send(bctx, "two"); err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("another process's turn after the first lost its connections = %+v, %v; want ok", res, err)
	}
	close(gate)
	select {
	case err := <-errA:
		t.Logf("the turn whose connections died: %v", err)
	case <-time.After(40 * time.Second):
		t.Fatal("the turn whose connections died never returned")
	}
	if res, err := sa.Send(bctx, "three"); err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("the next turn of the process whose connections died = %+v, %v; want ok", res, err)
	}
	entries, err := stB.Read(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
	checkEnded(t, entries)
	t.Logf("transcript: %v", types(entries))
}
