package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// behindProxy returns a store on Redis directly and one on the same keys
// through a proxy that can lose replies, with the scripts in the server's
// cache so that every call of them is an EVALSHA the proxy recognises.
func behindProxy(t *testing.T) (direct, via *redisstore.Store, p *proxy) {
	direct = newStore(t)
	p, u := startProxy(t)
	via, err := redisstore.Open(t.Context(), u, redisstore.WithPrefix(direct.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { via.Close() })
	if err := redisstore.LoadScripts(t.Context(), direct); err != nil {
		t.Fatal(err)
	}
	return direct, via, p
}

func ids(entries []transcript.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return out
}

func wantIDs(t *testing.T, s store.Store, key store.Key, want ...transcript.Entry) {
	t.Helper()
	got, err := s.Read(context.Background(), key)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Fatalf("session holds %v, want %v", g, w)
	}
}

// The script ran but every reply to it was lost (go-redis sent it again,
// and lost those replies too): Append finds its entry in the session and
// reports success.
func TestAppendLostReply(t *testing.T) {
	direct, via, p := behindProxy(t)
	key := store.Key{Agent: "agent", ID: "lost-reply"}
	entries := storetestAppend(t, via, key, 2)
	p.set(redisstore.AppendScriptHash, dropReply)
	e := storetest.NewEntry(storetest.Head(entries), time.Now(), "x.note", nil)
	if err := via.Append(t.Context(), key, e); err != nil {
		t.Fatalf("Append with its replies lost: %v, want success: the entry is there", err)
	}
	p.mu.Lock()
	dropped := p.dropped
	p.mu.Unlock()
	if dropped == 0 {
		t.Fatal("the proxy lost no reply")
	}
	wantIDs(t, direct, key, append(entries, e)...)
	p.set(redisstore.AppendScriptHash, relay)
	next := storetest.NewEntry(e.ID, time.Now(), "x.note", nil)
	if err := via.Append(t.Context(), key, next); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, direct, key, append(entries, e, next)...)
}

// Another writer appended after the lost call before Append could look:
// the call is no longer the session's last append, but its entry is in the
// session, so Append still reports success.
func TestAppendLostReplyThenAnotherWriter(t *testing.T) {
	direct, via, p := behindProxy(t)
	key := store.Key{Agent: "agent", ID: "lost-then-moved"}
	entries := storetestAppend(t, via, key, 2)
	e := storetest.NewEntry(storetest.Head(entries), time.Now(), "x.note", nil)
	after := storetest.NewEntry(e.ID, time.Now(), "x.note", nil)
	var mu sync.Mutex
	var otherErr error
	p.mu.Lock()
	p.onDrop = func() {
		mu.Lock()
		defer mu.Unlock()
		otherErr = direct.Append(context.Background(), key, after)
	}
	p.mu.Unlock()
	p.set(redisstore.AppendScriptHash, dropReply)
	err := via.Append(t.Context(), key, e)
	mu.Lock()
	defer mu.Unlock()
	if otherErr != nil {
		t.Fatalf("the other writer: %v", otherErr)
	}
	if err != nil {
		t.Fatalf("Append with its reply lost and another append after it: %v, want success", err)
	}
	wantIDs(t, direct, key, append(entries, e, after)...)
}

// The script never reached Redis: Append reports that it was not
// appended, and fences the call off, so that the copies still on their
// way, arriving late, are refused rather than applied behind the caller's
// back.
func TestAppendNeverArrived(t *testing.T) {
	direct, via, p := behindProxy(t)
	key := store.Key{Agent: "agent", ID: "never-arrived"}
	entries := storetestAppend(t, via, key, 2)
	p.set(redisstore.AppendScriptHash, hold)
	e := storetest.NewEntry(storetest.Head(entries), time.Now(), "x.note", nil)
	err := via.Append(t.Context(), key, e)
	if err == nil || errors.Is(err, redisstore.ErrOutcomeUnknown) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("Append that never reached Redis: %v, want a plain error (not appended)", err)
	}
	wantIDs(t, direct, key, entries...)
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if len(held) == 0 {
		t.Fatal("the proxy held no command")
	}
	for _, cmd := range held {
		res, err := direct.Client().Do(t.Context(), cmd...).Slice()
		if err != nil || len(res) != 1 || res[0] != int64(3) {
			t.Fatalf("a late copy of the call: %v, %v, want it refused ({3})", res, err)
		}
	}
	wantIDs(t, direct, key, entries...)
	p.set(redisstore.AppendScriptHash, relay)
	if err := via.Append(t.Context(), key, e); err != nil {
		t.Fatalf("the entry in a new call: %v", err)
	}
	wantIDs(t, direct, key, append(entries, e)...)
}

// TestBulkLateCopyFenced: AppendBulk pipelines the append script for two
// new sessions, and neither call reaches Redis. AppendBulk settles the
// first, finds it not appended and returns its error, having fenced the
// second too: a copy of either arriving late appends nothing after
// AppendBulk returned (store.BulkAppender: "nothing of the call lands
// after it has returned").
func TestBulkLateCopyFenced(t *testing.T) {
	direct, via, p := behindProxy(t)
	p.set(redisstore.AppendScriptHash, hold)
	ka, kb := store.Key{Agent: "agent", ID: "bulk-a"}, store.Key{Agent: "agent", ID: "bulk-b"}
	err := via.AppendBulk(t.Context(), []store.Batch{
		{Key: ka, Entries: []transcript.Entry{storetest.NewEntry("", time.Now(), "x.note", nil)}},
		{Key: kb, Entries: []transcript.Entry{storetest.NewEntry("", time.Now(), "x.note", nil)}},
	})
	if err == nil {
		t.Fatal("AppendBulk through a network that delivered nothing succeeded")
	}
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if len(held) < 2 {
		t.Fatalf("the proxy held %d commands, want the pipeline's two", len(held))
	}
	for _, cmd := range held {
		direct.Client().Do(t.Context(), cmd...) // the copies still in the network arrive
	}
	wantIDs(t, direct, ka)
	wantIDs(t, direct, kb)
}

// When the check after a lost reply cannot run either, Append says that
// it does not know: ErrOutcomeUnknown, here for an entry that is in fact
// in the session.
func TestAppendOutcomeUnknown(t *testing.T) {
	direct, via, p := behindProxy(t)
	key := store.Key{Agent: "agent", ID: "unknown"}
	entries := storetestAppend(t, via, key, 1)
	p.set(redisstore.AppendScriptHash, dropReply)
	p.set(redisstore.SettleScriptHash, dropReply)
	e := storetest.NewEntry(storetest.Head(entries), time.Now(), "x.note", nil)
	err := via.Append(t.Context(), key, e)
	if !errors.Is(err, redisstore.ErrOutcomeUnknown) {
		t.Fatalf("Append with every reply lost: %v, want ErrOutcomeUnknown", err)
	}
	wantIDs(t, direct, key, append(entries, e)...)
}
