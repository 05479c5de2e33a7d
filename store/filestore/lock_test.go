package filestore

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

func TestLockAcrossStores(t *testing.T) {
	// Two Stores open the lock file separately, as two processes do.
	root := t.TempDir()
	a, b := open(t, root), open(t, root)
	key := store.Key{Agent: "a", Owner: "u", ID: "s"}
	unlock, err := a.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx, key); err != context.DeadlineExceeded {
		t.Fatalf("second Lock while held: %v, want context.DeadlineExceeded", err)
	}
	if u, err := b.Lock(t.Context(), store.Key{Agent: "a", Owner: "u", ID: "other"}); err != nil {
		t.Fatalf("Lock of another session: %v", err)
	} else {
		u()
	}
	got := make(chan func())
	go func() {
		u, err := b.Lock(t.Context(), key)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(20 * time.Millisecond)
	unlock()
	unlock() // twice is harmless
	select {
	case u := <-got:
		u()
	case <-time.After(5 * time.Second):
		t.Fatal("Lock not granted after unlock")
	}
}

func TestLockFileRemovedWhileWaiting(t *testing.T) {
	root := t.TempDir()
	a, b, c := open(t, root), open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	unlock, err := a.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		u, err := b.Lock(t.Context(), key)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(20 * time.Millisecond)
	// The file b waits on goes away; the lock it would get excludes no one.
	if err := os.Remove(filepath.Join(root, "a", "s.jsonl.lock")); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	defer u()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Lock(ctx, key); err != context.DeadlineExceeded {
		t.Fatalf("a third Lock got in beside b: %v", err)
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	seed(t, s, key, "", t0, 3)
	unlock, err := s.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	writeRaw(t, filepath.Join(root, "a", "s.jsonl"), []byte(`{"torn`), os.O_APPEND)
	read(t, s, key) // sets the torn line aside
	writeRaw(t, filepath.Join(root, "a", "s.jsonl.off"), make([]byte, 8), 0)
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(root, "a", "s.*"))
	if len(names) != 0 {
		t.Fatalf("Delete left %v", names)
	}
	if got := read(t, s, key); got != nil {
		t.Fatalf("deleted session reads %d entries", len(got))
	}
	// The same id starts empty.
	fresh := seed(t, s, key, "", t0.Add(time.Hour), 1)
	sameEntries(t, read(t, open(t, root), key), fresh)
}

func TestAppendGivesUpOnContext(t *testing.T) {
	// Another process holds the transcript's lock and does not let go (it
	// hangs, or is stopped): an append waits only as long as its context.
	root := t.TempDir()
	s := open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	entries := seed(t, s, key, "", t0, 1)
	f, err := os.OpenFile(filepath.Join(root, "a", "s.jsonl"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockFile(f, true); err != nil {
		t.Fatal(err)
	}
	next := storetest.Chain(entries[0].ID, t0.Add(time.Second), 1)[0]
	for range 2 { // the first wait, abandoned, must not get in the way of the next
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		if err := s.Append(ctx, key, next); err != context.DeadlineExceeded {
			t.Fatalf("Append while another holds the lock: %v, want context.DeadlineExceeded", err)
		}
		cancel()
	}
	unlockFile(f)
	if err := s.Append(t.Context(), key, next); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, read(t, s, key), append(entries, next))
}

// openFDs counts this process's open file descriptors, or returns -1 where
// the system does not list them.
func openFDs(t *testing.T) int {
	t.Helper()
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if names, err := os.ReadDir(dir); err == nil {
			return len(names)
		}
	}
	return -1
}

func TestAbandonedLockWaitsLeaveNothing(t *testing.T) {
	// Each wait that its context ends must give back its file and leave no
	// goroutine behind while the holder keeps the lock.
	root := t.TempDir()
	a, b := open(t, root), open(t, root)
	key := store.Key{Agent: "a", ID: "s"}
	seed(t, a, key, "", t0, 1)
	unlock, err := a.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	f, err := os.OpenFile(filepath.Join(root, "a", "s.jsonl"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lockFile(f, true); err != nil {
		t.Fatal(err)
	}
	defer unlockFile(f)
	wait := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Millisecond)
		defer cancel()
		if _, err := b.Lock(ctx, key); err != context.DeadlineExceeded {
			t.Fatalf("Lock while held: %v, want context.DeadlineExceeded", err)
		}
		ctx, cancel = context.WithTimeout(t.Context(), 2*time.Millisecond)
		defer cancel()
		if _, err := b.Read(ctx, key); err != context.DeadlineExceeded {
			t.Fatalf("Read while the transcript is locked: %v, want context.DeadlineExceeded", err)
		}
	}
	wait() // the first call may open what later calls reuse
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	const n = 200
	for range n {
		wait()
	}
	// A few goroutines of the runtime or the test framework may come and
	// go; a leak is one or two per call.
	if g := runtime.NumGoroutine(); g > goroutines+n/10 {
		t.Errorf("goroutines: %d before %d abandoned waits, %d after", goroutines, 2*n, g)
	}
	if fds >= 0 {
		if got := openFDs(t); got > fds+n/10 {
			t.Errorf("open files: %d before %d abandoned waits, %d after", fds, 2*n, got)
		}
	}
	// A wait whose context cannot end still blocks until the release.
	got := make(chan error, 1)
	go func() {
		u, err := b.Lock(context.Background(), key)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Lock without a deadline returned while held: %v", err)
	default:
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("Lock without a deadline after the release: %v", err)
	}
}
