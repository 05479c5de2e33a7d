package pgstore

import (
	"context"
	"errors"
	"fmt"
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

// lockThenUnlock takes key's lock on s in a goroutine, and lets it go at
// once; the channel has Lock's error when it returned.
func lockThenUnlock(ctx context.Context, s *Store, key store.Key) <-chan error {
	got := make(chan error, 1)
	go func() {
		u, err := s.Lock(ctx, key)
		if err == nil {
			u()
		}
		got <- err
	}()
	return got
}

func TestLockAcrossReplicas(t *testing.T) {
	schema := newSchema(t)
	a, b := openIn(t, schema), openIn(t, schema)
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	unlock, err := a.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	got := lockThenUnlock(bg, b, key)
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
	// Any number of turns in flight lock their sessions on two shared
	// connections: the 40 locks held here at once would have waited for
	// each other's connections when each lock held one.
	schema := newSchema(t)
	a := openIn(t, schema, WithLockConns(3))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	var unlocks []func()
	for i := range 40 {
		u, err := a.Lock(ctx, store.Key{Agent: "a", ID: fmt.Sprint(i)})
		if err != nil {
			t.Fatalf("lock %d of 40 with three lock connections: %v", i+1, err)
		}
		unlocks = append(unlocks, u)
	}
	if n := a.locks.pool.Stat().TotalConns(); n > lockHolders {
		t.Fatalf("40 locks nobody else held use %d connections, want at most %d", n, lockHolders)
	}
	// Holding them never keeps appends from a connection.
	c := newChain(t, a, store.Key{Agent: "a", ID: "0"}, t0)
	c.user("written while the lock is held")

	// A replica waits for one of them in the server's queue, on a
	// connection of its own.
	b := openIn(t, schema, WithLockConns(3))
	key := store.Key{Agent: "a", ID: "7"}
	got := make(chan func(), 1)
	go func() {
		u, err := b.Lock(ctx, key)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	for waiters(t, b, key) == 0 {
		if ctx.Err() != nil {
			t.Fatal("replica B does not wait in the server's queue for a lock A holds")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// One more of its requests finds no connection free to wait on, and
	// asks again until the lock is free.
	third := lockThenUnlock(ctx, b, store.Key{Agent: "a", ID: "8"})
	select {
	case err := <-third:
		t.Fatalf("B took a lock A holds (%v)", err)
	case <-time.After(150 * time.Millisecond):
	}
	if n := waiters(t, b, store.Key{Agent: "a", ID: "8"}); n != 0 {
		t.Fatalf("%d connections wait for the second lock; B has one connection to wait on, taken", n)
	}
	for _, u := range unlocks {
		u()
	}
	u := <-got
	if u == nil {
		t.FailNow()
	}
	u()
	if err := <-third; err != nil {
		t.Fatalf("B's lock that asked again, once A released it: %v", err)
	}
	if n := b.locks.pool.Stat().TotalConns(); n > 3 {
		t.Fatalf("B's lock pool holds %d connections, more than lock_conns=3", n)
	}
}

func TestLockInProcess(t *testing.T) {
	// Advisory locks are reentrant on one connection: two callers of one
	// store must still exclude each other.
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := s.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if _, err := s.Lock(ctx, key); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Lock of a held session in the same store: %v, want it to wait", err)
	}
	got := lockThenUnlock(bg, s, key)
	time.Sleep(20 * time.Millisecond)
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// What was released is free in the database too.
	other := openIn(t, s.Schema())
	ctx, cancel = context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	u, err := other.Lock(ctx, key)
	if err != nil {
		t.Fatalf("a replica's Lock after the holder's unlock: %v", err)
	}
	u()
}

func TestLockLostConnection(t *testing.T) {
	// A holder whose connection dies loses the lock; the server releases
	// it and another replica gets it. The first replica's unlock finds it
	// gone, and its next locks use a new connection.
	schema := newSchema(t)
	a, b := openIn(t, schema), openIn(t, schema)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := a.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(bg, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE granted AND `+lockRows,
		lockKey("session", a.Schema(), key.Agent, key.Owner, key.ID)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	u, err := b.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock after the holder's connection died: %v", err)
	}
	unlock() // finds the connection gone, and must not hang or panic
	for i := range 4 {
		k := store.Key{Agent: "a", ID: fmt.Sprint("other", i)}
		u, err := a.Lock(ctx, k)
		if err != nil {
			t.Fatalf("a Lock after a holder's connection died: %v", err)
		}
		u()
	}
	u()
	u, err = a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock again of the session whose holder died: %v", err)
	}
	u()
}

// Timeouts the caller set for the store's connections (in its URL, or for
// its role or database on the server) are meant for queries: a Lock waits
// in the server's queue, and a holder connection sits idle holding locks,
// for as long as turns last. statement_timeout or lock_timeout ended the
// wait, failing a Lock whose context still ran; idle_session_timeout made
// the server close an idle holder, handing its locks to another replica.
func TestLockIgnoresSessionTimeouts(t *testing.T) {
	schema := newSchema(t)
	timeouts := "statement_timeout=200&lock_timeout=200&idle_session_timeout=300"
	a, err := Open(bg, withParams(testURL(t), timeouts), WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := openIn(t, schema)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := b.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(time.Second, unlock)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	start := time.Now()
	unlock, err = a.Lock(ctx, key) // waits past statement_timeout and lock_timeout
	if err != nil {
		t.Fatalf("a Lock waiting for another replica failed after %v: %v", time.Since(start), err)
	}
	defer unlock()
	other := store.Key{Agent: "a", ID: "idle"}
	unlockOther, err := a.Lock(bg, other) // on a holder, idle from now on
	if err != nil {
		t.Fatal(err)
	}
	defer unlockOther()
	time.Sleep(time.Second) // past idle_session_timeout
	for _, k := range []store.Key{key, other} {
		short, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		u, err := b.Lock(short, k)
		cancel()
		if err == nil {
			u()
			t.Fatalf("another replica took %s, held by a connection idle past idle_session_timeout", k.ID)
		}
	}
}
