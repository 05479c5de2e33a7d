package sqlitestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// TestWriteWaitsForLock: an append or a delete that finds another
// connection holding the database's write lock waits for it and lands once
// it is released; the wait ends with its context, and after the busy
// timeout with SQLITE_BUSY.
func TestWriteWaitsForLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	patient := openAt(t, path, WithBusyTimeout(time.Hour))
	hasty := openAt(t, path, WithBusyTimeout(20*time.Millisecond))
	holder := openAt(t, path)
	key := store.Key{Agent: "a", ID: "s"}
	entries := storetest.Chain("", time.Now(), 2)

	hold := func() func() {
		t.Helper()
		tx, err := holder.w.begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback() }
	}
	release := hold()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- patient.Append(ctx, key, entries[0]) }()
	time.Sleep(30 * time.Millisecond) // let it wait (or not: it ends with ctx either way)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append waiting for the lock when its context ended: %v; want context.Canceled", err)
	}
	if err := hasty.Append(t.Context(), key, entries[0]); !isBusy(err) {
		t.Fatalf("Append waiting past its busy timeout: %v; want SQLITE_BUSY", err)
	}
	go func() { done <- patient.Append(t.Context(), key, entries[0]) }()
	time.Sleep(30 * time.Millisecond)
	release()
	if err := <-done; err != nil {
		t.Fatalf("Append after the lock was released: %v", err)
	}
	appendAll(t, patient, key, entries[1]) // the connection is not left in a transaction

	release = hold()
	go func() { done <- patient.Delete(t.Context(), key) }()
	time.Sleep(30 * time.Millisecond)
	release()
	if err := <-done; err != nil {
		t.Fatalf("Delete after the lock was released: %v", err)
	}
	if got, err := patient.Read(t.Context(), key); err != nil || len(got) != 0 {
		t.Fatalf("Read after Delete: %d entries, %v", len(got), err)
	}
}
