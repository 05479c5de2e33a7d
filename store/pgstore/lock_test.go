package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// lockRows is the condition on pg_locks for the advisory lock of key in
// s ($1), which pg_locks shows split in two 32-bit halves.
const lockRows = `locktype = 'advisory' AND objid::bigint = ($1::bigint & 4294967295) AND classid::bigint = ($1::bigint >> 32 & 4294967295)`

// waiters counts the connections waiting for the lock of key in s.
func waiters(t *testing.T, s *Store, key store.Key) int {
	t.Helper()
	var n int
	if err := admin(t).QueryRow(bg, `SELECT count(*) FROM pg_locks WHERE NOT granted AND `+lockRows,
		lockKey("session", s.Schema(), key.Agent, key.Owner, key.ID)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLockAcrossReplicas(t *testing.T) {
	schema := newSchema(t)
	a, b := openIn(t, schema), openIn(t, schema)
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	unlock, err := a.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(bg, key)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("replica B took the lock replica A holds (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	unlock() // a second call does nothing
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Another schema is another store: its session of the same key is not
	// this one.
	other := newStore(t)
	unlock, err = a.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	u, err := other.Lock(ctx, key)
	if err != nil {
		t.Fatalf("a store in another schema waits for this one's lock: %v", err)
	}
	u()
}

func TestLockCancelLeavesTheQueue(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := s.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past its deadline: %v, want context.DeadlineExceeded", err)
	}
	// The cancel request ended the server's wait: no connection is left in
	// the lock's queue to take it later.
	deadline := time.Now().Add(5 * time.Second)
	for waiters(t, s, key) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a cancelled Lock still waits in the server's lock queue")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLockConnections(t *testing.T) {
	s := newStore(t, WithLockConns(1))
	k1, k2 := store.Key{Agent: "a", ID: "1"}, store.Key{Agent: "a", ID: "2"}
	u1, err := s.Lock(bg, k1)
	if err != nil {
		t.Fatal(err)
	}
	// Holding a lock never keeps appends from a connection.
	c := newChain(t, s, k1, t0)
	c.user("written while the lock is held")
	// With one lock connection, a second lock waits for the first.
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, k2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock with one connection: %v", err)
	}
	u1()
	u2, err := s.Lock(bg, k2)
	if err != nil {
		t.Fatal(err)
	}
	u2()
	if n := s.lockPool.Stat().TotalConns(); n != 1 {
		t.Fatalf("lock pool holds %d connections; unlock must return the one it used", n)
	}
}

func TestLockLostConnection(t *testing.T) {
	// A holder whose connection dies loses the lock; the server releases
	// it and another holder gets it.
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := s.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(bg, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE granted AND `+lockRows,
		lockKey("session", s.Schema(), key.Agent, key.Owner, key.ID)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	u, err := s.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock after the holder's connection died: %v", err)
	}
	u()
	unlock() // finds the connection gone, and must not hang or panic
}
