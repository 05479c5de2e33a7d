package storekit_test

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
)

func TestLocalLocks(t *testing.T) {
	var l storekit.LocalLocks
	ctx := context.Background()
	a := store.Key{Agent: "a", ID: "1"}
	unlock, err := l.Lock(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// Another key is free.
	other, err := l.Lock(ctx, store.Key{Agent: "a", ID: "2"})
	if err != nil {
		t.Fatal(err)
	}
	other()
	// The same key waits, and a waiter that gives up leaves nothing behind.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(short, a); err == nil {
		t.Fatal("a held lock was granted twice")
	}
	got := make(chan func())
	go func() {
		u, err := l.Lock(ctx, a)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlock()
	unlock() // releasing twice is harmless
	(<-got)()
	if n := l.Len(); n != 0 {
		t.Fatalf("%d locks kept after all were released", n)
	}
}
