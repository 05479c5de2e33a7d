package sqlitestore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// TestConcurrentHandles races writers from several goroutines on each of
// several Stores opened on one file, all continuing one session: every
// append either lands as the child of the session's last entry or fails
// with ErrConflict, and the session stays one chain with every landed
// entry in it.
func TestConcurrentHandles(t *testing.T) {
	const (
		handles    = 3
		goroutines = 4
		perWriter  = 15
	)
	path := filepath.Join(t.TempDir(), "spool.db")
	stores := make([]*Store, handles)
	for i := range stores {
		stores[i] = openAt(t, path)
	}
	key := store.Key{Agent: "race", Owner: "u", ID: "one"}

	var (
		mu     sync.Mutex
		landed = map[string]bool{}
		wg     sync.WaitGroup
		errs   = make(chan error, handles*goroutines)
	)
	for h := range handles {
		for g := range goroutines {
			wg.Go(func() {
				s := stores[h]
				for n := 0; n < perWriter; {
					tail, _, err := s.ReadTail(t.Context(), key, 1)
					if err != nil {
						errs <- err
						return
					}
					parent := storetest.Head(tail)
					e := storetest.NewEntry(parent, time.Now(), transcript.TypeUserMessage,
						transcript.UserMessage{Text: fmt.Sprintf("handle %d writer %d message %d", h, g, n)})
					switch err := s.Append(t.Context(), key, e); {
					case err == nil:
						mu.Lock()
						landed[e.ID] = true
						mu.Unlock()
						n++
					case errors.Is(err, store.ErrConflict):
						// Another writer got there first: read the new head and retry.
					default:
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	for i, s := range stores {
		got, err := s.Read(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != handles*goroutines*perWriter || len(got) != len(landed) {
			t.Fatalf("handle %d reads %d entries; %d appends succeeded", i, len(got), len(landed))
		}
		parent := ""
		for j, e := range got {
			if e.ParentID != parent || !landed[e.ID] {
				t.Fatalf("handle %d: entry %d (%s) has parent %q, want %q (landed: %v)", i, j, e.ID, e.ParentID, parent, landed[e.ID])
			}
			parent = e.ID
		}
		info, err := s.Stat(t.Context(), key)
		if err != nil || info.Entries != len(got) || info.MessageCount != len(got) {
			t.Fatalf("handle %d: Stat = %+v, %v; want %d entries", i, info, err, len(got))
		}
	}
}

// TestConcurrentSessions appends to many sessions at once from several
// handles: no append waits forever on the write lock or fails with
// SQLITE_BUSY.
func TestConcurrentSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	a, b := openAt(t, path), openAt(t, path)
	ns := store.Namespace{Agent: "many"}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			entries := storetest.Chain("", time.Now(), 10)
			for _, e := range entries {
				if err := s.Append(t.Context(), ns.Key(fmt.Sprintf("s%d", i)), e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	page, err := a.List(t.Context(), ns, store.ListOptions{})
	if err != nil || len(page.Sessions) != 16 {
		t.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
	}
	for _, info := range page.Sessions {
		if info.Entries != 10 {
			t.Fatalf("session %s has %d entries, want 10", info.ID, info.Entries)
		}
	}
}
