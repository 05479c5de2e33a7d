package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// keyOn returns a session key whose lock s takes on holder i.
func keyOn(s *Store, i int, prefix string) (store.Key, int64) {
	for n := 0; ; n++ {
		k := store.Key{Agent: "a", ID: fmt.Sprint(prefix, n)}
		id := lockKey("session", s.schema, k.Agent, k.Owner, k.ID)
		if uint64(id)%lockHolders == uint64(i) {
			return k, id
		}
	}
}

// A Lock that reaches a holder Close has already let go of (Close waits
// for the other one, busy with a statement) must not open a connection
// there: nothing would release it, and Close would wait for it for ever.
func TestLockDuringClose(t *testing.T) {
	s := openIn(t, newSchema(t))
	warm, _ := keyOn(s, 0, "warm")
	u, err := s.Lock(bg, warm)
	if err != nil {
		t.Fatal(err)
	}
	u()
	lk := s.locks
	lk.holders[1].sem <- struct{}{} // a statement on holder 1
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(100 * time.Millisecond) // Close has dropped holder 0, waits for 1
	_, id := keyOn(s, 0, "late")
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := lk.claim(ctx, id); err != nil {
		t.Fatal(err)
	}
	unlock, err := lk.lock(ctx, id)
	if err == nil {
		unlock()
	}
	<-lk.holders[1].sem
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("Close hangs after a Lock during it (Lock: %v)", err)
	}
	if err == nil {
		t.Fatal("a Lock on a closing store took a lock")
	}
}
