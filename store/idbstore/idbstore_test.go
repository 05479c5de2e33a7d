//go:build js && wasm

package idbstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		// The suite keeps up to about 200 sessions in a namespace.
		return openTest(t, WithRetention(store.Retention{}))
	})
}

func TestRetentionOnCreate(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{MaxSessions: 3}))
	ns := store.Namespace{Agent: "chat"}
	other := store.Namespace{Agent: "chat", Owner: "ann"}
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	for i := range 4 {
		newSession(t, s, other.Key(fmt.Sprintf("o%d", i)), start, 1)
	}
	// Sessions s0…s4, each newer than the one before.
	for i := range 5 {
		newSession(t, s, ns.Key(fmt.Sprintf("s%d", i)), start.Add(time.Duration(i)*time.Minute), 2)
		want := []string{"s4", "s3", "s2", "s1", "s0"}[4-i:]
		if len(want) > 3 {
			want = want[:3]
		}
		if got := ids(t, s, ns); !slices.Equal(got, want) {
			t.Fatalf("after creating s%d with MaxSessions 3: List shows %v, want %v", i, got, want)
		}
	}
	if got := ids(t, s, other); len(got) != 3 {
		t.Errorf("creating sessions of %s pruned another namespace's: %v (it had 4 and kept 3 when its own last session was made)", ns, got)
	}
	// Appending to an old session creates nothing and prunes nothing, and
	// makes it the newest.
	entries, err := s.Read(t.Context(), ns.Key("s2"))
	if err != nil || len(entries) != 2 {
		t.Fatalf("Read s2: %d entries, %v", len(entries), err)
	}
	next := storetest.Chain(storetest.Head(entries), start.Add(time.Hour), 1)
	if err := s.Append(t.Context(), ns.Key("s2"), next[0]); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, s, ns); !slices.Equal(got, []string{"s2", "s4", "s3"}) {
		t.Errorf("after appending to s2: List shows %v, want [s2 s4 s3]", got)
	}
	// A new session counts as kept even when its activity is the oldest.
	newSession(t, s, ns.Key("old"), start.Add(-24*time.Hour), 1)
	if got := ids(t, s, ns); !slices.Equal(got, []string{"s2", "s4", "old"}) {
		t.Errorf("after creating a session older than the rest: List shows %v, want [s2 s4 old]", got)
	}
	for _, id := range []string{"s0", "s1", "s3"} {
		if got, err := s.Read(t.Context(), ns.Key(id)); err != nil || len(got) != 0 {
			t.Errorf("pruned session %s must read empty (entries deleted with the record); got %d entries, %v", id, len(got), err)
		}
	}
}

func TestRetentionMaxAge(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	s := openTest(t, WithRetention(store.Retention{MaxAge: 30 * day}), WithClock(func() time.Time { return now }))
	ns := store.Namespace{Agent: "chat", Owner: "bob"}
	newSession(t, s, ns.Key("ancient"), now.Add(-100*day), 1)
	newSession(t, s, ns.Key("old"), now.Add(-30*day-time.Nanosecond), 1) // idle just over 30 days
	newSession(t, s, ns.Key("edge"), now.Add(-30*day), 1)                // idle exactly 30 days: kept
	// Creating sessions pruned the ancient ones as each was made; only the
	// newest creation decides what is left now.
	newSession(t, s, ns.Key("fresh"), now.Add(-time.Hour), 3)
	if got := ids(t, s, ns); !slices.Equal(got, []string{"fresh", "edge"}) {
		t.Errorf("with MaxAge 30 days, List shows %v, want [fresh edge]", got)
	}
}

func TestDefaultRetention(t *testing.T) {
	s := openTest(t) // store.DefaultRetention
	if s.cfg.retention != store.DefaultRetention {
		t.Fatalf("default retention %+v, want store.DefaultRetention", s.cfg.retention)
	}
	ns := store.Namespace{Agent: "chat"}
	start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Hour)
	newSession(t, s, ns.Key("expired"), start.Add(-91*24*time.Hour), 1)
	for i := range 51 {
		newSession(t, s, ns.Key(fmt.Sprintf("s%02d", i)), start.Add(time.Duration(i)*time.Second), 1)
	}
	got := ids(t, s, ns)
	if len(got) != 50 || got[0] != "s50" || got[49] != "s01" {
		t.Errorf("with the default retention, 51 new sessions and one idle 91 days leave %d: %v…; want the newest 50, s50 to s01", len(got), got[:min(len(got), 3)])
	}
}

func TestCloseAndReopen(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	key := store.Key{Agent: "chat", ID: "one"}
	entries := newSession(t, s, key, time.Now().UTC().Add(-time.Minute), 3)
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	got, err := s.Read(t.Context(), key)
	if err != nil || len(got) != 3 || got[2].ID != entries[2].ID {
		t.Fatalf("Read after Close must open the database again and see the session: %d entries, %v", len(got), err)
	}
	// Another Store on the same database sees it too (another page).
	other, err := New(t.Context(), s.Name(), WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Read(t.Context(), key); err != nil || len(got) != 3 {
		t.Errorf("a second Store on the database reads %d entries, %v", len(got), err)
	}
	other.Close()

	// Close while goroutines append: every call still succeeds, on the old
	// connection (running transactions finish) or on a new one.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			k := store.Key{Agent: "chat", ID: fmt.Sprintf("w%d", w)}
			parent := ""
			for i := range 6 {
				e := storetest.Chain(parent, time.Now().UTC(), 1)[0]
				if err := s.Append(t.Context(), k, e); err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, i, err)
					return
				}
				parent = e.ID
			}
		})
	}
	for range 10 {
		time.Sleep(time.Millisecond)
		s.Close()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an append while the store was closed and reopened: %v", err)
	}
	for w := range 8 {
		if got, err := s.Read(t.Context(), store.Key{Agent: "chat", ID: fmt.Sprintf("w%d", w)}); err != nil || len(got) != 6 {
			t.Errorf("writer %d: %d entries after closes, %v; want 6", w, len(got), err)
		}
	}
}

// TestConflictAcrossStores has two Stores on one database, as two tabs
// would, race on one session: for each parent exactly one append wins.
func TestConflictAcrossStores(t *testing.T) {
	a := openTest(t, WithRetention(store.Retention{}))
	b, err := New(t.Context(), a.Name(), WithRetention(store.Retention{}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key := store.Key{Agent: "chat", Owner: "ann", ID: "shared"}
	head := storetest.Head(newSession(t, a, key, time.Now().UTC().Add(-time.Hour), 1))
	for round := range 10 {
		at := time.Now().UTC()
		ea := storetest.NewEntry(head, at, transcript.TypeUserMessage, transcript.UserMessage{Text: "from a"})
		eb := storetest.NewEntry(head, at, transcript.TypeUserMessage, transcript.UserMessage{Text: "from b"})
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() { errA = a.Append(t.Context(), key, ea) })
		wg.Go(func() { errB = b.Append(t.Context(), key, eb) })
		wg.Wait()
		switch {
		case errA == nil && errors.Is(errB, store.ErrConflict):
			head = ea.ID
		case errB == nil && errors.Is(errA, store.ErrConflict):
			head = eb.ID
		default:
			t.Fatalf("round %d: two appends with the same parent from two stores: errors %v and %v; want one success and one ErrConflict", round, errA, errB)
		}
	}
	got, err := b.Read(t.Context(), key)
	if err != nil || len(got) != 11 || storetest.Head(got) != head {
		t.Errorf("after 10 rounds the session has %d entries ending in %s (%v); want 11 ending in %s", len(got), storetest.Head(got), err, head)
	}
}

// TestCancelMidAppend cancels appends at varying moments: an Append that
// returns nil has stored its entry, one that returns an error has not.
func TestCancelMidAppend(t *testing.T) {
	s := openTest(t, WithRetention(store.Retention{}))
	key := store.Key{Agent: "chat", ID: "cancel"}
	head := storetest.Head(newSession(t, s, key, time.Now().UTC().Add(-time.Hour), 1))
	stored, failed := 0, 0
	for i := range 40 {
		e := storetest.NewEntry(head, time.Now().UTC(), transcript.TypeUserMessage, transcript.UserMessage{Text: "maybe"})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Append(ctx, key, e) }()
		// Cancel before the transaction starts, while it runs, or after it
		// committed.
		time.Sleep(time.Duration(i%6) * time.Millisecond)
		cancel()
		err := <-done
		got, rerr := s.Read(t.Context(), key)
		if rerr != nil {
			t.Fatal(rerr)
		}
		has := storetest.Head(got) == e.ID
		switch {
		case err == nil && !has:
			t.Fatalf("attempt %d: Append returned nil but the entry is not stored", i)
		case err != nil && has:
			t.Fatalf("attempt %d: Append returned %v but the entry is stored", i, err)
		case err != nil && !errors.Is(err, context.Canceled):
			t.Fatalf("attempt %d: Append failed with %v, want context.Canceled", i, err)
		}
		if has {
			head = e.ID
			stored++
		} else {
			failed++
		}
	}
	t.Logf("of 40 cancelled appends %d were stored and %d were not", stored, failed)
}
