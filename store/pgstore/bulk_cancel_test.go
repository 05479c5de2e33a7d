package pgstore

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// TestBulkCancelledLandsNothingLater: store.BulkAppender promises that
// nothing of a call lands after it has returned, also when ctx ended while
// it ran. A batch's statement that waits in the server (here on a row lock
// another transaction holds) when ctx ends is waited for, with a TTL (its
// first entry through Append) as without: the entry is in when AppendBulk
// returns, or never.
func TestBulkCancelledLandsNothingLater(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(ttl.String(), func(t *testing.T) {
			schema := newSchema(t)
			chk := openIn(t, schema, WithTTL(ttl)) // migrates; reads on a pool of its own
			var slow atomic.Bool
			cfg, err := pgxpool.ParseConfig(testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			var d net.Dialer
			cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if slow.Load() { // a slow network to the server, for the cancel request
					time.Sleep(2 * time.Second)
				}
				return d.DialContext(ctx, network, addr)
			}
			pool, err := pgxpool.NewWithConfig(bg, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s, err := New(bg, pool, WithSchema(schema), WithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			key := store.Key{Agent: "a", ID: "s"}

			// Another transaction is inserting the same session; the
			// bulk's insert waits for it.
			blocker, err := pgx.Connect(bg, testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Close(bg)
			tx, err := blocker.Begin(bg)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixNano()
			if _, err := tx.Exec(bg, s.sql(`INSERT INTO {s}.sessions (agent, owner, id, started_ns, last_ns, title, message_count, pending, compactions, entries, head)
				VALUES ('a', '', 's', $1, $1, '', 0, 0, 0, 1, 'x')`), now); err != nil {
				t.Fatal(err)
			}

			e, err := transcript.New(time.Now(), transcript.TypeUserMessage, "turn", transcript.UserMessage{Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			slow.Store(true)
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.AppendBulk(ctx, []store.Batch{{Key: key, Entries: []transcript.Entry{e}}}) }()

			var bulkErr error
			returned := false
			select {
			case bulkErr = <-done:
				returned = true
			case <-time.After(time.Second):
			}
			if returned {
				// AppendBulk returned while its statement still waits in
				// the server. The other transaction ends now.
				got, _, err := chk.ReadTail(bg, key, 10)
				if err != nil || len(got) != 0 {
					t.Fatalf("right after AppendBulk (%v): %d entries, %v", bulkErr, len(got), err)
				}
			}
			if err := tx.Rollback(bg); err != nil {
				t.Fatal(err)
			}
			if !returned {
				bulkErr = <-done
			}
			time.Sleep(500 * time.Millisecond)
			got, _, err := chk.ReadTail(bg, key, 10)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("AppendBulk returned %v (before the blocker ended: %v); the session now has %d entries", bulkErr, returned, len(got))
			if returned && len(got) > 0 {
				t.Fatalf("AppendBulk returned %v, and its entry landed after it had returned", bulkErr)
			}
			if !returned && bulkErr != nil && !errors.Is(bulkErr, store.ErrConflict) && len(got) > 0 {
				t.Fatalf("AppendBulk failed (%v) but its entry is there", bulkErr)
			}
		})
	}
}
