package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// lockOrFail takes key's lock, failing t if Lock fails or hangs.
func lockOrFail(t *testing.T, l store.Locker, ctx context.Context, key store.Key) func() {
	t.Helper()
	var (
		unlock func()
		err    error
	)
	if !returns(t, "Lock of "+key.String()+", which nobody holds,", func() { unlock, err = l.Lock(ctx, key) }) {
		t.FailNow()
	}
	if err != nil {
		t.Fatalf("Lock %s: %v", key, err)
	}
	return unlock
}

func testLockExclusion(t *testing.T, s store.Store) {
	l := skipUnless[store.Locker](t, s)
	key := newNamespace().Key(name("sess"))
	const workers, rounds = 4, 5
	var (
		mu      sync.Mutex
		inside  int
		overlap int
		wg      sync.WaitGroup
		errs    = make(chan error, workers)
	)
	for range workers {
		wg.Go(func() {
			for range rounds {
				unlock, err := l.Lock(t.Context(), key)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside > 1 {
					overlap++
				}
				mu.Unlock()
				time.Sleep(time.Millisecond) // let another holder in, if the lock would
				mu.Lock()
				inside--
				mu.Unlock()
				unlock()
			}
		})
	}
	if !returns(t, "Lock by goroutines taking turns", wg.Wait) {
		return
	}
	close(errs)
	for err := range errs {
		t.Errorf("Lock: %v", err)
	}
	if overlap > 0 {
		t.Errorf("Lock must give mutual exclusion per key: %d times two goroutines held the lock of one session at once", overlap)
	}

	// A second Lock waits for the first to be released.
	unlock := lockOrFail(t, l, t.Context(), key)
	got := make(chan func(), 1)
	go func() {
		u, err := l.Lock(t.Context(), key)
		if err != nil {
			t.Errorf("Lock waiting for a held lock: %v", err)
			u = func() {}
		}
		got <- u
	}()
	select {
	case u := <-got:
		u()
		t.Fatalf("Lock returned while another holder had not released the lock")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(hangLimit):
		t.Fatalf("Lock still waits %v after the holder released the lock", hangLimit)
	}
}

func testLockOtherKeys(t *testing.T, s store.Store) {
	l := skipUnless[store.Locker](t, s)
	ns := store.Namespace{Agent: name("agent"), Owner: name("owner")}
	key := ns.Key(name("sess"))
	unlock := lockOrFail(t, l, t.Context(), key)
	defer unlock()
	others := []store.Key{
		ns.Key(name("other")),
		{Agent: ns.Agent, ID: key.ID},
		{Agent: ns.Agent, Owner: name("owner"), ID: key.ID},
		{Agent: name("agent"), Owner: ns.Owner, ID: key.ID},
	}
	for _, k := range others {
		u := lockOrFail(t, l, t.Context(), k)
		defer u()
	}
}

func testLockCancel(t *testing.T, s store.Store) {
	l := skipUnless[store.Locker](t, s)
	key := newNamespace().Key(name("sess"))
	unlock := lockOrFail(t, l, t.Context(), key)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		u, err := l.Lock(ctx, key)
		if err == nil {
			u()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it start waiting; the check holds either way
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("Lock of a held lock returned no error after its context was cancelled; it must give up")
		} else if !errors.Is(err, context.Canceled) {
			t.Logf("Lock gave up on cancellation with an error that does not match context.Canceled: %v", err)
		}
	case <-time.After(hangLimit):
		t.Fatalf("Lock waiting for a held lock still waits %v after its context was cancelled", hangLimit)
	}
	unlock()
	lockOrFail(t, l, t.Context(), key)()
}
