package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/redisstore"
)

// A watcher in a process whose connections to Redis hang for good (new
// ones go through) gets the turn run elsewhere meanwhile: the hung
// pub/sub connection is replaced, the watcher's listener dropped, and it
// watches again from its last event, which it gets from the transcript.
func TestWatchAfterHungForGood(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 500*time.Millisecond)
	ctx := t.Context()
	one := newStore(t)
	p, u := faultnet.New(t, redisURL(t))
	two, err := redisstore.Open(ctx, u, redisstore.WithPrefix(one.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })
	runs, err := spool.New(spool.Config{Store: one, Model: echo.New()})
	if err != nil {
		t.Fatal(err)
	}
	watches, err := spool.New(spool.Config{Store: two, Model: echo.New()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := runs.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	other, err := watches.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends := make(chan string, 2)
	ready := make(chan struct{})
	go func() {
		defer close(ends)
		// As a client of the server does (SSE's Last-Event-ID): a watch
		// that ends, its listener dropped, is begun again after the last
		// event it gave.
		var last spool.EventID
		once := sync.OnceFunc(func() { close(ready) })
		for wctx.Err() == nil {
			for ev, err := range other.Watch(wctx, spool.WatchOptions{After: last, Follow: true, Ready: once}) {
				if err != nil {
					t.Error(err)
					return
				}
				if last, err = spool.ParseEventID(ev.ID); err != nil {
					t.Error(err)
					return
				}
				if ev.Kind == spool.EventTurnEnd {
					ends <- ev.TurnID
				}
			}
		}
	}()
	<-ready
	for i, prompt := range []string{"before", "while hung"} {
		res, err := sess.Send(ctx, prompt)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case got, ok := <-ends:
			if !ok {
				t.Fatalf("turn %d (%s): the watch ended", i, prompt)
			}
			if got != res.TurnID {
				t.Fatalf("turn %d: the watcher got the end of turn %q, want %q", i, got, res.TurnID)
			}
		case <-wctx.Done():
			t.Fatalf("turn %d (%s): the watcher never got its end", i, prompt)
		}
		if i == 0 {
			p.Hang()
		}
	}
}
