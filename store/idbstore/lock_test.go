//go:build js && wasm

package idbstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// TestWebLockAcrossStores has two Stores on one database, as two pages
// would: a session's lock held through one blocks the other, and another
// database's lock of the same key does not.
func TestWebLockAcrossStores(t *testing.T) {
	a := openTest(t)
	b, err := New(t.Context(), a.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := openTest(t) // another database
	key := store.Key{Agent: "chat", Owner: "ann", ID: "s1"}
	unlock, err := a.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if u, err := b.Lock(ctx, key); err == nil {
		u()
		t.Fatal("a second Store on the same database took a session's lock while the first held it")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock waiting for a held lock ended with %v, want its context's error", err)
	}
	uc, err := c.Lock(t.Context(), key)
	if err != nil {
		t.Fatalf("the same key's lock in another database: %v", err)
	}
	uc()
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(t.Context(), key)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	unlock()
	unlock() // a second call does nothing
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("Lock after the holder released it: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock still waits 10s after the holder released the lock")
	}
}

// TestPageLockFallback checks the lock used where the Web Locks API is
// missing; the conformance suite exercises the Web Locks one.
func TestPageLockFallback(t *testing.T) {
	s := openTest(t, withoutWebLocks())
	key := store.Key{Agent: "chat", ID: "s1"}
	unlock, err := s.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s.Lock(t.Context(), store.Key{Agent: "chat", ID: "s2"}); err != nil {
		t.Fatalf("another session's lock: %v", err)
	} else {
		u()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if u, err := s.Lock(ctx, key); err == nil {
		u()
		t.Fatal("Lock of a held lock succeeded")
	}
	got := make(chan error, 1)
	go func() {
		u, err := s.Lock(t.Context(), key)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	unlock()
	if err := <-got; err != nil {
		t.Errorf("Lock after release: %v", err)
	}
	if n := s.locks.Len(); n != 0 {
		t.Errorf("%d page locks left after every lock was released; want none", n)
	}
	if _, err := s.Lock(t.Context(), store.Key{Agent: "chat", ID: "a/b"}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Lock of an invalid key: %v, want ErrInvalidKey", err)
	}
}
