package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// waitForLockWait returns once a statement of schema that starts with
// prefix waits for a lock, failing the test after a while.
func waitForLockWait(t *testing.T, schema, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := admin(t).QueryRow(bg, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			AND starts_with(query, $1) AND position($2 in query) > 0`, prefix, schema).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %q statement of %s waited for a lock", prefix, schema)
}

func TestPruneSparesSessionAppendedWhileWaiting(t *testing.T) {
	// Prune's statement sees A as the oldest of three and would keep two;
	// an append to A, in flight, holds A's row. When the append commits A
	// is the newest but one, and Prune, which waited on the row, must
	// leave it.
	schema := newSchema(t)
	s := openIn(t, schema)
	for i := range 5 {
		ns := store.Namespace{Agent: fmt.Sprint("a", i), Owner: "o"}
		a := newChain(t, s, ns.Key("A"), t0.Add(time.Second))
		a.user("a")
		newChain(t, s, ns.Key("B"), t0.Add(2*time.Second)).user("b")
		newChain(t, s, ns.Key("C"), t0.Add(4*time.Second)).user("c")

		a.now = t0.Add(3 * time.Second)
		e := a.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "late"})
		r, err := newRow(a.key, e)
		if err != nil {
			t.Fatal(err)
		}
		// The append's own statement, in a transaction held open so that
		// Prune meets its row lock.
		tx, err := s.pool.Begin(bg)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(bg, s.sql(appendNextSQL), a.key.Agent, a.key.Owner, a.key.ID, e.ID, r.tsNs, r.messages, r.title, r.pending,
			e.ParentID, s.cutoff(), r.line, r.search, r.retitle, r.compacts)
		if err != nil || tag.RowsAffected() != 1 {
			tx.Rollback(bg)
			t.Fatalf("append in a transaction: %v, %d rows", err, tag.RowsAffected())
		}
		type result struct {
			n   int
			err error
		}
		done := make(chan result, 1)
		go func() {
			n, err := s.Prune(bg, ns, store.Retention{MaxSessions: 2}, t0.Add(time.Hour))
			done <- result{n, err}
		}()
		waitForLockWait(t, schema, "DELETE FROM")
		if err := tx.Commit(bg); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil || got.n != 0 {
			t.Fatalf("namespace %d: Prune: %d, %v; want 0 deleted", i, got.n, got.err)
		}
		read, err := s.Read(bg, a.key)
		if err != nil {
			t.Fatal(err)
		}
		equalEntries(t, read, append(a.all, e))
	}
}

func TestPruneRacingAppend(t *testing.T) {
	// The race without holding anything: an append to the oldest session
	// and a Prune at once, from two Stores. Whichever goes first, an
	// acknowledged append is never followed by its session's deletion.
	iterations := 40
	if testing.Short() {
		iterations = 10
	}
	schema := newSchema(t)
	s, w := openIn(t, schema), openIn(t, schema)
	acked := 0
	for i := range iterations {
		ns := store.Namespace{Agent: fmt.Sprint("a", i), Owner: "o"}
		a := newChain(t, s, ns.Key("A"), t0.Add(time.Second))
		a.user("a")
		newChain(t, s, ns.Key("B"), t0.Add(2*time.Second)).user("b")
		newChain(t, s, ns.Key("C"), t0.Add(4*time.Second)).user("c")
		a.now = t0.Add(3 * time.Second)
		e := a.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "late"})
		start := make(chan struct{})
		var wg sync.WaitGroup
		var appendErr, pruneErr error
		wg.Go(func() {
			<-start
			appendErr = w.Append(bg, a.key, e)
		})
		wg.Go(func() {
			<-start
			_, pruneErr = s.Prune(bg, ns, store.Retention{MaxSessions: 2}, t0.Add(time.Hour))
		})
		close(start)
		wg.Wait()
		if pruneErr != nil {
			t.Fatalf("iteration %d: Prune: %v", i, pruneErr)
		}
		if appendErr != nil {
			if !errors.Is(appendErr, store.ErrConflict) {
				t.Fatalf("iteration %d: append: %v", i, appendErr)
			}
			continue // Prune went first
		}
		acked++
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		got, err := s.Read(ctx, a.key)
		cancel()
		if err != nil || len(got) != 2 {
			t.Fatalf("iteration %d: the append to A was acknowledged, then A read %d entries (%v)", i, len(got), err)
		}
	}
	t.Logf("%d of %d appends acknowledged", acked, iterations)
}
