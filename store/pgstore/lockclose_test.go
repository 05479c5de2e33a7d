package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/internal/faultnet"
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
	for dropped := false; !dropped; { // Close drops holder 0, then waits for 1
		h := lk.holders[0]
		h.sem <- struct{}{}
		dropped = h.conn == nil
		<-h.sem
		time.Sleep(time.Millisecond)
	}
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

// shadowed opens a Store on schema whose connections look up functions
// in a schema of their own first (search_path), made by the statements
// sql returns given its quoted name: a function there shadows
// pg_catalog's (a pg_try_advisory_lock that refuses, say), and a table
// there tells it when to. It returns the store and that quoted name.
func shadowed(t *testing.T, schema string, sql func(q string) string, opts ...Option) (*Store, string) {
	t.Helper()
	fx := newSchema(t)
	q := pgx.Identifier{fx}.Sanitize()
	if _, err := admin(t).Exec(bg, `CREATE SCHEMA `+q+`; `+sql(q)); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = fx + ", pg_catalog"
	return openPool(t, cfg, schema, opts...), q
}

// The server refusing one Lock's statement on a holder (out of shared
// memory for locks, a statement cancelled by an administrator) leaves
// the connection working: the locks of the other sessions it holds
// must stay held, not go with a connection closed for it.
func TestLockRefusedKeepsTheOthers(t *testing.T) {
	schema := newSchema(t)
	a, q := shadowed(t, schema, func(q string) string {
		return `CREATE TABLE ` + q + `.fail (x int);
		CREATE FUNCTION ` + q + `.pg_try_advisory_lock(k bigint) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM ` + q + `.fail) THEN
				RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200';
			END IF;
			RETURN pg_catalog.pg_try_advisory_lock(k);
		END $$`
	})
	held, _ := keyOn(a, 0, "held")
	refused, _ := keyOn(a, 0, "refused")
	unlock, err := a.Lock(bg, held)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := admin(t).Exec(bg, `INSERT INTO `+q+`.fail VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lock(bg, refused); err == nil {
		t.Fatal("Lock succeeded through a refusing server")
	}
	if _, err := admin(t).Exec(bg, `DELETE FROM `+q+`.fail`); err != nil {
		t.Fatal(err)
	}
	b := openIn(t, schema)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	if u, err := b.Lock(ctx, held); err == nil {
		u()
		t.Fatal("another replica took a lock still held: the refusal of another Lock released it")
	}
}

// The server refusing to release one lock (a statement timeout, out of
// memory) on a holder leaves the connection working: the locks of the
// other sessions it holds must stay held, not go with a connection closed
// for it, and the refused lock is released when the last of them is.
// With lock_conns at 2, both holders' connections fill the lock pool:
// the holder whose connection keeps the refused lock takes a new one all
// the same.
func TestUnlockRefusedKeepsTheOthers(t *testing.T) {
	for _, conns := range []int{16, 2} {
		t.Run(fmt.Sprint("lock_conns=", conns), func(t *testing.T) { unlockRefused(t, conns) })
	}
}

func unlockRefused(t *testing.T, conns int) {
	schema := newSchema(t)
	a, q := shadowed(t, schema, func(q string) string {
		return `CREATE TABLE ` + q + `.fail (k bigint);
		CREATE FUNCTION ` + q + `.pg_advisory_unlock(k bigint) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM ` + q + `.fail WHERE fail.k = pg_advisory_unlock.k) THEN
				RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014';
			END IF;
			RETURN pg_catalog.pg_advisory_unlock(k);
		END $$`
	}, WithLockConns(conns))
	b := openIn(t, schema)
	other, _ := keyOn(a, 1, "other") // holder 1's connection
	unlockOther, err := a.Lock(bg, other)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockOther()
	held, _ := keyOn(a, 0, "held")
	refused, refusedID := keyOn(a, 0, "refused")
	later, _ := keyOn(a, 0, "later")
	unlockHeld, err := a.Lock(bg, held)
	if err != nil {
		t.Fatal(err)
	}
	defer unlockHeld()
	unlockRefused, err := a.Lock(bg, refused)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin(t).Exec(bg, `INSERT INTO `+q+`.fail VALUES ($1)`, refusedID); err != nil {
		t.Fatal(err)
	}
	unlockRefused()
	if _, err := admin(t).Exec(bg, `DELETE FROM `+q+`.fail`); err != nil {
		t.Fatal(err)
	}
	short := func(s *Store, key store.Key) error {
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		defer cancel()
		u, err := s.Lock(ctx, key)
		if err == nil {
			u()
		}
		return err
	}
	if short(b, held) == nil {
		t.Fatal("another replica took a lock still held: the refused unlock of another session released it")
	}
	// The holder still grants locks, on another connection than the one
	// that keeps the refused lock.
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	unlockLater, err := a.Lock(ctx, later)
	if err != nil {
		t.Fatalf("Lock after a refused unlock on its holder: %v", err)
	}
	defer unlockLater()
	unlockHeld()
	u, err := b.Lock(ctx, refused)
	if err != nil {
		t.Fatalf("the lock whose unlock was refused is still held after the others on its connection were unlocked: %v", err)
	}
	u()
	if short(b, later) == nil {
		t.Fatal("another replica took a lock taken after a refused unlock: it went with the connection closed for it")
	}
	u, err = a.Lock(ctx, refused) // claimed no more in this process
	if err != nil {
		t.Fatal(err)
	}
	u()
}

// A Lock waiting for a lock another replica holds, in the server's queue
// on a connection of its own, ends when its store is closed, and Close
// does not wait for it: it waited for the Lock's context, and Close for
// the connection.
func TestCloseEndsWaitingLocks(t *testing.T) {
	schema := newSchema(t)
	a := openIn(t, schema)
	b, err := Open(t.Context(), testURL(t), WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := a.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	got := lockThenUnlock(bg, b, key)
	for deadline := time.Now().Add(5 * time.Second); waiters(t, b, key) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("B does not wait in the server's queue")
		}
	}
	closed := make(chan struct{})
	go func() {
		b.Close()
		close(closed)
	}()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("a waiting Lock when its store closed: %v, want the store closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Lock waiting in the server's queue did not end when its store closed")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a Lock still waiting")
	}
}

// A holder whose connection hangs (the network drops everything, no reset
// comes) is closed when its statement times out. Closing it must not keep
// Close, nor a new holder connection of a full lock pool, waiting for the
// hung connection's cleanup (pgx drains it for up to 15 s).
func TestHungHolderClosesAtOnce(t *testing.T) {
	timeout := lockStatementTimeout
	lockStatementTimeout = 300 * time.Millisecond
	t.Cleanup(func() { lockStatementTimeout = timeout })
	schema := newSchema(t)
	p, u := faultnet.New(t, testURL(t))
	s, err := Open(t.Context(), u, WithSchema(schema), WithLockConns(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	key := store.Key{Agent: "a", ID: "hung"}
	unlock, err := s.Lock(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	p.Hang()
	unlock() // times out: the holder's connection is closed
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	u2, err := s.Lock(ctx, key) // on a new connection, the only one of the pool
	if err != nil {
		t.Fatalf("Lock after its holder hung and was closed: %v (after %v)", err, time.Since(start))
	}
	p.Hang()
	u2()
	start = time.Now()
	s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v after a hung holder connection was closed", d)
	}
}
