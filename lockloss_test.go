package spool_test

import (
	"context"
	"io"
	"iter"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore/pgtest"
	"github.com/spool-go/spool/transcript"
)

// cutProxy relays TCP to a database server and can cut every connection
// it relays at once, as a server restart or a network failure does.
type cutProxy struct {
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

// newCutProxy starts a proxy to the host of rawURL and returns it and
// rawURL pointed at it.
func newCutProxy(t *testing.T, rawURL string) (*cutProxy, string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{target: u.Host}
	u.Host = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.cut() })
	return p, u.String()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

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
	p, viaProxy := newCutProxy(t, u)
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
	p.cut()

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
