package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// The server refusing one Lock's statement on a holder (out of shared
// memory for locks, a statement cancelled by an administrator) leaves
// the connection working: the locks of the other sessions it holds
// must stay held, not go with a connection closed for it.
func TestLockRefusedKeepsTheOthers(t *testing.T) {
	schema, fx := newSchema(t), newSchema(t)
	q := pgx.Identifier{fx}.Sanitize()
	if _, err := admin(t).Exec(bg, `CREATE SCHEMA `+q+`; CREATE TABLE `+q+`.fail (x int);
		CREATE FUNCTION `+q+`.pg_try_advisory_lock(k bigint) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM `+q+`.fail) THEN
				RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200';
			END IF;
			RETURN pg_catalog.pg_try_advisory_lock(k);
		END $$`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = fx + ", pg_catalog"
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	a, err := New(bg, pool, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
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
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(bg, key)
		if err == nil {
			u()
		}
		got <- err
	}()
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
