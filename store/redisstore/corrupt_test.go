package redisstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func keyNames(s interface{ Prefix() string }, k store.Key) (log, info, idx string) {
	tag := "{" + s.Prefix() + ":" + k.Agent + ":" + k.Owner + "}"
	return tag + ":s:" + k.ID + ":log", tag + ":s:" + k.ID + ":info", tag + ":idx"
}

// A list element that is not an entry fails every read that meets it with
// a CorruptError naming the session and position; reads that do not meet
// it, and other sessions, still work.
func TestCorruptEntry(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	key := store.Key{Agent: "agent", Owner: "u1", ID: "broken"}
	storetestAppend(t, s, key, 10)
	other := store.Key{Agent: "agent", Owner: "u1", ID: "fine"}
	storetestAppend(t, s, other, 3)
	logKey, _, _ := keyNames(s, key)
	if err := s.Client().LSet(ctx, logKey, 6, `{"id":"x","timestamp":"garbage"`).Err(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var ce *store.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("%s: %v, want a *store.CorruptError", what, err)
		}
		if ce.Key != key || ce.Position != 6 || !strings.Contains(err.Error(), "agent/u1/broken") || !strings.Contains(ce.Where, "index 6") {
			t.Fatalf("%s: %v (key %v, position %d, where %q): want session agent/u1/broken at 6", what, err, ce.Key, ce.Position, ce.Where)
		}
	}
	_, err := s.Read(ctx, key)
	check("Read", err)
	_, _, err = s.ReadRange(ctx, key, 5, 8)
	check("ReadRange", err)
	_, _, err = s.ReadTail(ctx, key, 4)
	check("ReadTail", err)
	if got, n, err := s.ReadRange(ctx, key, 0, 6); err != nil || len(got) != 6 || n != 10 {
		t.Fatalf("ReadRange before the bad element: %d entries of %d, %v", len(got), n, err)
	}
	if got, n, err := s.ReadTail(ctx, key, 3); err != nil || len(got) != 3 || n != 10 {
		t.Fatalf("ReadTail after the bad element: %d entries of %d, %v", len(got), n, err)
	}
	if got, err := s.Read(ctx, other); err != nil || len(got) != 3 {
		t.Fatalf("another session: %d entries, %v", len(got), err)
	}
	if page, err := s.List(ctx, key.Namespace(), store.ListOptions{}); err != nil || len(page.Sessions) != 2 {
		t.Fatalf("listing with a corrupt transcript: %+v, %v", page, err)
	}
}

// A session hash with a field that is not a number fails Stat and List
// with a CorruptError naming the session.
func TestCorruptInfo(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	key := store.Key{Agent: "agent", ID: "hashed"}
	storetestAppend(t, s, key, 2)
	_, infoKey, _ := keyNames(s, key)
	if err := s.Client().HSet(ctx, infoKey, "msgs", "many").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Stat(ctx, key)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("Stat: %v, want a CorruptError for %v", err, key)
	}
	_, err = s.List(ctx, key.Namespace(), store.ListOptions{})
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("List: %v, want a CorruptError for %v", err, key)
	}
}

// An append to a session whose list and hash disagree (one of them was
// removed behind the store's back) is refused as corrupt, not applied to
// half a session.
func TestAppendToHalfASession(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	for _, drop := range []string{"info", "log"} {
		key := store.Key{Agent: "agent", ID: "half-" + drop}
		entries := storetestAppend(t, s, key, 2)
		logKey, infoKey, _ := keyNames(s, key)
		victim := map[string]string{"info": infoKey, "log": logKey}[drop]
		if err := s.Client().Del(ctx, victim).Err(); err != nil {
			t.Fatal(err)
		}
		parent := storetest.Head(entries)
		if drop == "info" {
			parent = "" // the hash is gone, so the head looks empty
		}
		e := storetest.NewEntry(parent, time.Now(), "x.note", nil)
		if err := s.Append(ctx, key, e); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("append with the %s removed: %v, want ErrCorrupt", drop, err)
		}
	}
}

// storetestAppend appends a chain of n entries to a new session.
func storetestAppend(t *testing.T, s store.Store, key store.Key, n int) []transcript.Entry {
	t.Helper()
	entries := storetest.Chain("", time.Now().UTC().Add(-time.Hour), n)
	for _, e := range entries {
		if err := s.Append(t.Context(), key, e); err != nil {
			t.Fatal(err)
		}
	}
	return entries
}

// go-redis may send an append again after the connection failed with the
// reply in flight; the second run reports the first one's success, while a
// new call with the same entry is a conflict.
func TestAppendSentTwice(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	key := store.Key{Agent: "agent", ID: "retried"}
	entries := storetestAppend(t, s, key, 2)
	e := storetest.NewEntry(storetest.Head(entries), time.Now(), "x.note", nil)
	first, second, err := redisstore.AppendSentTwice(ctx, s, key, e)
	if err != nil {
		t.Fatal(err)
	}
	if first[0] != int64(1) || second[0] != int64(1) {
		t.Fatalf("replies %v and %v, want success twice", first, second)
	}
	if got := readAll(t, s, key); len(got) != 3 || got[2].ID != e.ID {
		t.Fatalf("after a resent append: %d entries", len(got))
	}
	if info, err := s.Stat(ctx, key); err != nil || info.Entries != 3 {
		t.Fatalf("after a resent append: info %+v, %v", info, err)
	}
	if err := s.Append(ctx, key, e); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the same entry in a new Append call: %v, want ErrConflict", err)
	}
}

// Timestamps outside what unix nanoseconds hold are refused, not indexed
// at a wrapped-around time.
func TestAppendTimestampRange(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "agent", ID: "ancient"}
	for _, at := range []time.Time{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)} {
		e := storetest.NewEntry("", time.Now(), "x.note", nil)
		e.Timestamp = at
		if err := s.Append(t.Context(), key, e); !errors.Is(err, store.ErrInvalidEntry) {
			t.Fatalf("append at %v: %v, want ErrInvalidEntry", at, err)
		}
	}
	if got := readAll(t, s, key); len(got) != 0 {
		t.Fatalf("a refused entry was stored")
	}
}
