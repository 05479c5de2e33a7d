package filestore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestSessionLocksAreTheirOwn: while one session's in-process lock is
// held, every other session's is free, the same session's waits until its
// context ends, and a lock nobody holds or waits for is not kept.
func TestSessionLocksAreTheirOwn(t *testing.T) {
	s, err := New(t.Context(), t.TempDir(), WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns := store.Namespace{Agent: "a"}
	ix, err := s.index(t.Context(), ns, true)
	if err != nil {
		t.Fatal(err)
	}
	held, err := ix.lockSession(t.Context(), "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Not a bound on time: a lock shared with the held one never comes.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 200 {
		other, err := ix.lockSession(ctx, fmt.Sprint("s", i), nil)
		if err != nil {
			t.Fatalf("session s%d waited for %s: %v", i, held.id, err)
		}
		ix.unlockSession(other)
	}
	gone, stop := context.WithCancel(t.Context())
	stop()
	if _, err := ix.lockSession(gone, "held", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the held session's lock again: %v, want context.Canceled", err)
	}
	ix.unlockSession(held)
	again, err := ix.lockSession(ctx, "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	ix.unlockSession(again)
	ix.mu.Lock()
	n := len(ix.sessions)
	ix.mu.Unlock()
	if n != 0 || ix.live.Load() != 0 {
		t.Fatalf("%d session locks kept (%d counted) with none held", n, ix.live.Load())
	}
}

// TestSessionHandOver: a session let go while callers wait goes to one of
// them, and a waiter whose context ends as it is handed the session hands
// it on: the session is never left held by nobody, whichever comes first.
func TestSessionHandOver(t *testing.T) {
	s, err := New(t.Context(), t.TempDir(), WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ix, err := s.index(t.Context(), store.Namespace{Agent: "a"}, true)
	if err != nil {
		t.Fatal(err)
	}
	// Not a bound on time: a session left held would never come.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	waiting := func(ss *session, n int) {
		for {
			ix.mu.Lock()
			w := ss.waiting
			ix.mu.Unlock()
			if w == n {
				return
			}
			runtime.Gosched()
		}
	}
	for i := range 300 {
		held, err := ix.lockSession(ctx, "s", nil)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		// One waiter whose context ends, and every other round one more
		// that waits it out.
		quit, stop := context.WithCancel(ctx)
		waiters := []context.Context{quit, ctx}[:1+i%2]
		got := make(chan error, len(waiters))
		for _, c := range waiters {
			go func() {
				ss, err := ix.lockSession(c, "s", nil)
				if err == nil {
					ix.unlockSession(ss)
				}
				got <- err
			}()
		}
		waiting(held, len(waiters))
		stop() // as the session is handed over, or just before
		ix.unlockSession(held)
		for range waiters {
			if err := <-got; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: %v", i, err)
			}
		}
		ix.mu.Lock()
		n := len(ix.sessions)
		ix.mu.Unlock()
		if n != 0 || ix.live.Load() != 0 {
			t.Fatalf("round %d: %d sessions kept (%d counted) with none held", i, n, ix.live.Load())
		}
	}
}
