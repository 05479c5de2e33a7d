package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// testBatchOrder: batches append in order, a new session's too, and read
// back as the same entries appended one by one; an empty batch is nothing.
func testBatchOrder(t *testing.T, s store.Store) {
	b := skipUnless[store.BatchAppender](t, s)
	key := newNamespace().Key(name("sess"))
	first := Chain("", base(), 3)
	if err := b.AppendBatch(t.Context(), key, first); err != nil {
		t.Fatalf("AppendBatch of a new session's first 3 entries: %v", err)
	}
	if err := b.AppendBatch(t.Context(), key, nil); err != nil {
		t.Fatalf("AppendBatch of nothing: %v", err)
	}
	single := Chain(Head(first), base().Add(time.Second), 1)
	appendAll(t, s, key, single...)
	more := Chain(Head(single), base().Add(2*time.Second), 40)
	if err := b.AppendBatch(t.Context(), key, more); err != nil {
		t.Fatalf("AppendBatch of 40 entries after 4: %v", err)
	}
	all := append(append(first, single...), more...)
	checkRead(t, s, key, all, "a session written in batches reads back as its entries in order")
	if info, err := store.Stat(t.Context(), s, key); err != nil || info.Entries != len(all) {
		t.Fatalf("Stat after batches: %+v %v, want %d entries", info, err, len(all))
	}
	next := Chain(Head(all), base().Add(3*time.Second), 1)
	appendAll(t, s, key, next...)
}

// testBatchConflict: a batch whose first parent is not the head, or whose
// entries do not chain, fails with ErrConflict and appends nothing.
func testBatchConflict(t *testing.T, s store.Store) {
	b := skipUnless[store.BatchAppender](t, s)
	key := newNamespace().Key(name("sess"))
	have := seed(t, s, key, base(), 2)
	stale := Chain(have[0].ID, base().Add(time.Second), 3)
	if err := b.AppendBatch(t.Context(), key, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AppendBatch after a stale parent: %v, want ErrConflict", err)
	}
	broken := Chain(Head(have), base().Add(time.Second), 3)
	broken[2].ParentID = broken[0].ID
	if err := b.AppendBatch(t.Context(), key, broken); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AppendBatch whose entries do not chain: %v, want ErrConflict", err)
	}
	fresh := newNamespace().Key(name("sess"))
	if err := b.AppendBatch(t.Context(), fresh, Chain("nope", base(), 2)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AppendBatch with a parent on a new session: %v, want ErrConflict", err)
	}
	checkRead(t, s, key, have, "a refused batch appends nothing")
	checkRead(t, s, fresh, nil, "a refused batch creates no session")
}

// testBatchInvalid: a batch with an entry that cannot be stored fails with
// ErrInvalidEntry and appends nothing, not even the entries before it.
func testBatchInvalid(t *testing.T, s store.Store) {
	b := skipUnless[store.BatchAppender](t, s)
	key := newNamespace().Key(name("sess"))
	have := seed(t, s, key, base(), 1)
	batch := Chain(Head(have), base().Add(time.Second), 3)
	batch[2].Status = "bogus"
	if err := b.AppendBatch(t.Context(), key, batch); !errors.Is(err, store.ErrInvalidEntry) {
		t.Fatalf("AppendBatch with an unknown status: %v, want ErrInvalidEntry", err)
	}
	checkRead(t, s, key, have, "a refused batch appends nothing")
}

// testBatchFallback: store.AppendBatch works on every store, with the
// capability or without.
func testBatchFallback(t *testing.T, s store.Store) {
	key := newNamespace().Key(name("sess"))
	entries := Chain("", base(), 5)
	if err := store.AppendBatch(t.Context(), s, key, entries); err != nil {
		t.Fatalf("store.AppendBatch: %v", err)
	}
	bad := Chain(Head(entries), base().Add(time.Second), 2)
	bad[1].Type = ""
	if err := store.AppendBatch(t.Context(), s, key, bad); !errors.Is(err, store.ErrInvalidEntry) {
		t.Fatalf("store.AppendBatch with an entry without type: %v, want ErrInvalidEntry", err)
	}
	checkRead(t, s, key, entries, "store.AppendBatch appends in order, and nothing of a refused batch")
}

// testBulk: AppendBulk appends many sessions' batches, two of one session
// in order, and reads back as the same entries appended one by one; a
// bulk with a refused batch names its session.
func testBulk(t *testing.T, s store.Store) {
	ns := newNamespace()
	var batches []store.Batch
	want := map[store.Key][]transcript.Entry{}
	for i := range 5 {
		key := ns.Key(name("sess"))
		entries := Chain("", base().Add(time.Duration(i)*time.Second), 3+i)
		batches = append(batches, store.Batch{Key: key, Entries: entries})
		want[key] = entries
	}
	again := batches[0].Key
	more := Chain(Head(want[again]), base().Add(time.Minute), 4)
	batches = append(batches, store.Batch{Key: again, Entries: more})
	want[again] = append(want[again], more...)
	if err := store.AppendBulk(t.Context(), s, batches); err != nil {
		t.Fatalf("AppendBulk: %v", err)
	}
	for key, entries := range want {
		checkRead(t, s, key, entries, "AppendBulk appends every batch in order")
	}
	stale := []store.Batch{{Key: again, Entries: Chain(want[again][0].ID, base().Add(2*time.Minute), 2)}}
	if err := store.AppendBulk(t.Context(), s, stale); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("AppendBulk with a stale parent: %v, want ErrConflict", err)
	}
	checkRead(t, s, again, want[again], "a refused batch appends nothing")
}

// testBulkResume: a bulk whose context ends while it runs (a process
// stopped mid-import) leaves each session with a prefix of its entries,
// read back whole and counted, nothing more of it lands after it returned,
// and appending the rest from where each session stands completes every
// one of them, as a transfer run again does.
func testBulkResume(t *testing.T, s store.Store) {
	ns := newNamespace()
	var batches []store.Batch
	for i := range 8 {
		entries := Chain("", base().Add(time.Duration(i)*time.Second), 6)
		batches = append(batches, store.Batch{Key: ns.Key(name("sess")), Entries: entries})
	}
	landed := map[store.Key]int{}
	for _, stopAfter := range []time.Duration{0, 200 * time.Microsecond, time.Millisecond, 3 * time.Millisecond} {
		ctx, cancel := context.WithCancel(t.Context())
		if stopAfter == 0 {
			cancel()
		} else {
			time.AfterFunc(stopAfter, cancel)
		}
		_ = store.AppendBulk(ctx, s, batches) // stopped anywhere, or not at all
		cancel()
		for _, b := range batches {
			got, err := s.Read(t.Context(), b.Key)
			if err != nil {
				t.Fatalf("Read after a stopped bulk: %v", err)
			}
			if len(got) > len(b.Entries) {
				t.Fatalf("a stopped bulk left %d entries of a batch of %d", len(got), len(b.Entries))
			}
			checkRead(t, s, b.Key, b.Entries[:len(got)], "a stopped bulk leaves a prefix of each batch")
			if info, err := store.Stat(t.Context(), s, b.Key); len(got) > 0 && (err != nil || info.Entries != len(got)) {
				t.Fatalf("Stat after a stopped bulk: %+v %v, want %d entries", info, err, len(got))
			}
			landed[b.Key] = len(got)
		}
		// A server may still be running what a store sent it when the
		// context ended: what it commits then must have been waited for.
		time.Sleep(20 * time.Millisecond)
		for _, b := range batches {
			if got, err := s.Read(t.Context(), b.Key); err != nil || len(got) != landed[b.Key] {
				t.Fatalf("%s: %d entries when the stopped bulk returned, %d a moment later (%v): it landed after it returned", b.Key, landed[b.Key], len(got), err)
			}
		}
	}
	var rest []store.Batch
	for _, b := range batches {
		got, err := s.Read(t.Context(), b.Key)
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, store.Batch{Key: b.Key, Entries: b.Entries[len(got):]})
	}
	if err := store.AppendBulk(t.Context(), s, rest); err != nil {
		t.Fatalf("AppendBulk of what a stopped bulk left: %v", err)
	}
	for _, b := range batches {
		checkRead(t, s, b.Key, b.Entries, "a stopped bulk completed")
	}
}
