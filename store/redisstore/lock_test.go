package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
)

func lockKey(s *redisstore.Store, k store.Key) string {
	logKey, _, _ := keyNames(s, k)
	return strings.TrimSuffix(logKey, ":log") + ":lock"
}

// A holder renews its lease: the lock outlives it several times over
// while held, and is free at once when released.
func TestLockRenews(t *testing.T) {
	const lease = 600 * time.Millisecond
	s := newStore(t, redisstore.WithLockLease(lease))
	key := store.Key{Agent: "agent", ID: "locked"}
	unlock, err := s.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * lease)
	ctx, cancel := context.WithTimeout(t.Context(), lease/2)
	defer cancel()
	if _, err := s.Lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a lock held for three leases was taken (%v): the holder did not renew it", err)
	}
	unlock()
	unlock() // a second call does nothing
	again, err := s.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	again()
}

// A holder that died (its key set, never renewed) blocks others only for
// what is left of its lease.
func TestLockOfDeadHolderRunsOut(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "agent", Owner: "u", ID: "orphan"}
	if err := s.Client().Set(t.Context(), lockKey(s, key), "a dead process's token", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	unlock, err := s.Lock(ctx, key)
	if err != nil {
		t.Fatalf("the lock of a dead holder was never freed: %v", err)
	}
	unlock()
}

// A holder whose lease ran out while someone else took the lock must not
// release the other's lock.
func TestUnlockLeavesAnothersLock(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "agent", ID: "stolen"}
	unlock, err := s.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the lease running out and another process taking it.
	if err := s.Client().Set(t.Context(), lockKey(s, key), "another token", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	unlock()
	if v := s.Client().Get(t.Context(), lockKey(s, key)).Val(); v != "another token" {
		t.Fatalf("unlock removed or changed another holder's lock (now %q)", v)
	}
}

func TestLockLeaseOption(t *testing.T) {
	s := newStore(t)
	if _, err := redisstore.New(t.Context(), s.Client(), redisstore.WithLockLease(time.Millisecond)); err == nil {
		t.Fatal("a 1ms lease was accepted")
	}
}
