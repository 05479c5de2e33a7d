package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func pttl(t *testing.T, s *redisstore.Store, k string) time.Duration {
	t.Helper()
	d, err := s.Client().PTTL(context.Background(), k).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sameStore opens a second store on s's keys with other options.
func sameStore(t *testing.T, s *redisstore.Store, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	o, err := redisstore.New(t.Context(), s.Client(), append([]redisstore.Option{redisstore.WithPrefix(s.Prefix())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func approval(parent string, at time.Time) transcript.Entry {
	return storetest.NewEntry(parent, at, transcript.TypeApprovalRequest,
		transcript.ApprovalRequest{ApprovalID: "ap1", CallID: "c1", Tool: "refund", Arguments: []byte(`{}`)})
}

func decision(parent string, at time.Time) transcript.Entry {
	return storetest.NewEntry(parent, at, transcript.TypeApprovalDecision,
		transcript.ApprovalDecision{ApprovalID: "ap1", CallID: "c1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
}

// The expiry each append sets, read back with PTTL: no waiting needed.
func TestTTLExpirySettings(t *testing.T) {
	const ttl = time.Hour
	s := newStore(t, redisstore.WithTTL(ttl))
	ctx := t.Context()
	now := time.Now().UTC()
	key := store.Key{Agent: "agent", Owner: "u", ID: "s"}
	logKey, infoKey, idxKey := keyNames(s, key)
	entries := storetestAppend(t, s, key, 3)
	inTTL := func(when string) {
		t.Helper()
		for _, k := range []string{logKey, infoKey} {
			if d := pttl(t, s, k); d <= 0 || d > ttl {
				t.Fatalf("%s: %s expires in %v, want within the TTL %v", when, k, d, ttl)
			}
		}
		if d := pttl(t, s, idxKey); d < pttl(t, s, infoKey) {
			t.Fatalf("%s: the index expires in %v, before its session", when, d)
		}
	}
	inTTL("after plain appends")

	req := approval(storetest.Head(entries), now)
	if err := s.Append(ctx, key, req); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{logKey, infoKey, idxKey} {
		if d := pttl(t, s, k); d < ttl+redisstore.PendingGrace-time.Minute || d > ttl+redisstore.PendingGrace {
			t.Fatalf("with an approval pending, %s expires in %v, want the TTL plus %v", k, d, redisstore.PendingGrace)
		}
	}
	if err := s.Append(ctx, key, decision(req.ID, now)); err != nil {
		t.Fatal(err)
	}
	inTTL("after the approval was decided")
	if d := pttl(t, s, idxKey); d < ttl+redisstore.PendingGrace-time.Minute {
		t.Fatalf("the index expiry went down to %v although it may hold other sessions", d)
	}

	// Kept until deleted while pending, with WithPendingTTL(0).
	keep := sameStore(t, s, redisstore.WithTTL(ttl), redisstore.WithPendingTTL(0))
	key2 := store.Key{Agent: "agent", Owner: "u", ID: "s2"}
	log2, info2, _ := keyNames(s, key2)
	if err := keep.Append(ctx, key2, approval("", now)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{log2, info2, idxKey} {
		if d := pttl(t, s, k); d != -1 {
			t.Fatalf("WithPendingTTL(0): %s expires in %v, want never (-1)", k, d)
		}
	}

	// A store without a TTL makes the keys it writes persistent.
	plain := sameStore(t, s)
	if err := plain.Append(ctx, key, storetest.NewEntry(storetest.Head(readAll(t, s, key)), now, "x.note", nil)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{logKey, infoKey} {
		if d := pttl(t, s, k); d != -1 {
			t.Fatalf("after an append without TTL: %s expires in %v, want never (-1)", k, d)
		}
	}
}

func readAll(t *testing.T, s store.Store, key store.Key) []transcript.Entry {
	t.Helper()
	got, err := s.Read(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestTTLOptions(t *testing.T) {
	s := newStore(t)
	if _, err := redisstore.New(t.Context(), s.Client(), redisstore.WithTTL(time.Hour), redisstore.WithPendingTTL(time.Minute)); err == nil {
		t.Fatal("a pending TTL shorter than the TTL was accepted")
	}
	for _, bad := range []redisstore.Option{redisstore.WithTTL(-1), redisstore.WithTTL(time.Microsecond), redisstore.WithPendingTTL(-time.Hour)} {
		if _, err := redisstore.New(t.Context(), s.Client(), bad); err == nil {
			t.Fatal("a bad TTL was accepted")
		}
	}
	if got := sameStore(t, s, redisstore.WithTTL(time.Hour)).TTL(); got != time.Hour {
		t.Fatalf("TTL() = %v", got)
	}
}

// A real expiry with a short TTL: the idle session disappears (and its id
// starts empty), the one with an approval pending stays with its old
// LastActivity, and the index stops listing the expired one.
func TestTTLExpires(t *testing.T) {
	const ttl = 1200 * time.Millisecond
	s := newStore(t, redisstore.WithTTL(ttl))
	ctx := t.Context()
	ns := store.Namespace{Agent: "agent"}
	idle, pending := ns.Key("idle"), ns.Key("pending")
	storetestAppend(t, s, idle, 3)
	first := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "refund order 1042"})
	req := approval(first.ID, time.Now())
	for _, e := range []transcript.Entry{first, req} {
		if err := s.Append(ctx, pending, e); err != nil {
			t.Fatal(err)
		}
	}

	deadline := time.Now().Add(30 * time.Second)
	for len(readAll(t, s, idle)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("session %s still there 30s after its TTL of %v", idle, ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := readAll(t, s, pending); len(got) != 2 {
		t.Fatalf("the session with an approval pending has %d entries after the TTL, want 2", len(got))
	}
	info, err := s.Stat(ctx, pending)
	if err != nil {
		t.Fatal(err)
	}
	if info.PendingApprovals != 1 || !info.LastActivity.Equal(req.Timestamp) || time.Since(info.LastActivity) < ttl {
		t.Fatalf("pending session info %+v: the runtime could not tell it expired with an approval pending", info)
	}
	page, err := s.List(ctx, ns, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "pending" {
		t.Fatalf("listing after expiry: %v, want only the pending session", ids2(page.Sessions))
	}
	_, _, idxKey := keyNames(s, idle)
	if n := s.Client().ZCard(ctx, idxKey).Val(); n != 1 {
		t.Fatalf("the index still holds %d members after listing, want 1", n)
	}
	// The expired id starts empty.
	fresh := storetest.NewEntry("", time.Now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "hello again"})
	if err := s.Append(ctx, idle, fresh); err != nil {
		t.Fatalf("starting the expired session afresh: %v", err)
	}
	if got := readAll(t, s, idle); len(got) != 1 || got[0].ID != fresh.ID {
		t.Fatalf("the expired session kept something: %d entries", len(got))
	}
}

// Stale index members, left by sessions that expired (simulated here by
// removing their keys), are never listed, are dropped by listing and by
// the sampling on append, and a session that starts again under an
// expired id is listed once.
func TestStaleIndexMembers(t *testing.T) {
	s := newStore(t) // no TTL: no sampling on append
	ctx := t.Context()
	ns := store.Namespace{Agent: "agent", Owner: "o"}
	expire := func(id string) {
		logKey, infoKey, _ := keyNames(s, ns.Key(id))
		if err := s.Client().Unlink(ctx, logKey, infoKey).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, _, idxKey := keyNames(s, ns.Key("x"))
	card := func() int64 { return s.Client().ZCard(ctx, idxKey).Val() }
	old := time.Now().UTC().Add(-time.Hour)
	for _, id := range []string{"x", "y", "z"} {
		if err := s.Append(ctx, ns.Key(id), storetest.NewEntry("", old, "x.note", nil)); err != nil {
			t.Fatal(err)
		}
	}
	expire("x")
	if err := s.Append(ctx, ns.Key("x"), storetest.NewEntry("", time.Now(), "x.note", nil)); err != nil {
		t.Fatal(err)
	}
	if n := card(); n != 4 {
		t.Fatalf("index holds %d members, want 4 (x twice)", n)
	}
	page, err := s.List(ctx, ns, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids2(page.Sessions); len(got) != 3 || page.Sessions[0].ID != "x" {
		t.Fatalf("listing %v, want x (once, newest), y and z", got)
	}
	if n := card(); n != 3 {
		t.Fatalf("index holds %d members after listing, want 3", n)
	}

	// Sampling on append (TTL stores): with three members, all are sampled.
	expire("y")
	expire("z")
	withTTL := sameStore(t, s, redisstore.WithTTL(time.Hour))
	head := storetest.Head(readAll(t, s, ns.Key("x")))
	if err := withTTL.Append(ctx, ns.Key("x"), storetest.NewEntry(head, time.Now(), "x.note", nil)); err != nil {
		t.Fatal(err)
	}
	if n := card(); n != 1 {
		t.Fatalf("index holds %d members after an append sampled them, want 1", n)
	}

	// A namespace left with only stale members is not a namespace.
	other := store.Namespace{Agent: "agent", Owner: "gone"}
	if err := s.Append(ctx, other.Key("a"), storetest.NewEntry("", old, "x.note", nil)); err != nil {
		t.Fatal(err)
	}
	logKey, infoKey, _ := keyNames(s, other.Key("a"))
	s.Client().Unlink(ctx, logKey, infoKey)
	namespaces, err := s.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(namespaces, []store.Namespace{ns}) {
		t.Fatalf("Namespaces() = %v, want [%v]", namespaces, ns)
	}
}
