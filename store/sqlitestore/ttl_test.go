package sqlitestore

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

func rawCount(t *testing.T, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.w.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// approvalSession appends a turn that waits on an approval.
func approvalSession(t *testing.T, s *Store, key store.Key, at time.Time) []transcript.Entry {
	t.Helper()
	user := storetest.NewEntry("", at, transcript.TypeUserMessage, transcript.UserMessage{Text: "delete my account"})
	req := storetest.NewEntry(user.ID, at, transcript.TypeApprovalRequest, transcript.ApprovalRequest{
		ApprovalID: "ap1", CallID: "c1", Tool: "delete_account", Arguments: []byte(`{}`)})
	appendAll(t, s, key, user, req)
	return []transcript.Entry{user, req}
}

func TestTTL(t *testing.T) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path, WithTTL(time.Hour), WithClock(c.now))
	ns := store.Namespace{Agent: "a", Owner: "u"}

	idle := seed(t, s, ns.Key("idle"), t0, 3)
	pending := approvalSession(t, s, ns.Key("pending"), t0)
	seed(t, s, ns.Key("fresh"), t0.Add(50*time.Minute), 3)
	boundary := seed(t, s, ns.Key("boundary"), t0.Add(time.Minute-2*time.Millisecond), 3) // last entry at t0+1m

	c.advance(time.Hour + time.Minute) // idle and pending idle 61m; boundary exactly 60m
	page, err := s.List(t.Context(), ns, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, info := range page.Sessions {
		listed = append(listed, info.ID)
	}
	if want := []string{"fresh", "boundary", "pending"}; !slices.Equal(listed, want) {
		t.Fatalf("List after the TTL = %v, want %v (idle longer than the TTL is hidden; idle exactly the TTL and a pending approval are not)", listed, want)
	}
	if got, err := s.Read(t.Context(), ns.Key("idle")); err != nil || len(got) != 0 {
		t.Fatalf("Read of an expired session: %d entries, %v; want none", len(got), err)
	}
	if got, total, err := s.ReadTail(t.Context(), ns.Key("idle"), 10); err != nil || len(got) != 0 || total != 0 {
		t.Fatalf("ReadTail of an expired session: %d of %d, %v", len(got), total, err)
	}
	if _, err := s.Stat(t.Context(), ns.Key("idle")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of an expired session: %v; want ErrNotFound", err)
	}
	if hits, err := s.Search(t.Context(), ns, store.SearchQuery{Text: "message 1"}); err != nil || len(hits) != 2 {
		t.Fatalf("Search: %d hits, %v; want those of fresh and boundary only", len(hits), err)
	}
	info, err := s.Stat(t.Context(), ns.Key("pending"))
	if err != nil || info.PendingApprovals != 1 {
		t.Fatalf("Stat of an expired session with an approval pending: %+v, %v; want it kept, with the approval", info, err)
	}
	if got, err := s.Read(t.Context(), ns.Key("boundary")); err != nil || !sameEntries(got, boundary) {
		t.Fatalf("Read of a session idle exactly the TTL: %d entries, %v", len(got), err)
	}
	if n := rawCount(t, s, `SELECT count(*) FROM sessions WHERE id = 'idle'`); n != 1 {
		t.Fatalf("the expired session was deleted before any sweep")
	}

	// Continuing the expired session with its old head is a conflict: as
	// far as anyone can see, the session is empty.
	late := storetest.NewEntry(storetest.Head(idle), c.now(), transcript.TypeUserMessage, transcript.UserMessage{Text: "still there?"})
	if err := s.Append(t.Context(), ns.Key("idle"), late); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Append to an expired session after its old head: %v; want ErrConflict", err)
	}
	// Starting it again starts fresh under the same id.
	restart := storetest.Chain("", c.now(), 2)
	appendAll(t, s, ns.Key("idle"), restart...)
	if got, err := s.Read(t.Context(), ns.Key("idle")); err != nil || !sameEntries(got, restart) {
		t.Fatalf("Read of an expired session started again: %d entries, %v; want only the new %d", len(got), err, len(restart))
	}
	if info, _ := s.Stat(t.Context(), ns.Key("idle")); info.Entries != 2 || !info.Started.Equal(restart[0].Timestamp) {
		t.Fatalf("Stat of the restarted session: %+v", info)
	}

	// Resolving the approval resets its clock.
	decision := storetest.NewEntry(storetest.Head(pending), c.now(), transcript.TypeApprovalDecision, transcript.ApprovalDecision{
		ApprovalID: "ap1", CallID: "c1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
	appendAll(t, s, ns.Key("pending"), decision)
	c.advance(59 * time.Minute)
	if info, err := s.Stat(t.Context(), ns.Key("pending")); err != nil || info.PendingApprovals != 0 {
		t.Fatalf("Stat 59 minutes after the approval was resolved: %+v, %v; want it visible", info, err)
	}
	c.advance(2 * time.Minute)
	if _, err := s.Stat(t.Context(), ns.Key("pending")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat 61 minutes after the approval was resolved: %v; want ErrNotFound", err)
	}
}

func TestTTLSweep(t *testing.T) {
	// Every entry indexed before the sweeps, and every entry only logged.
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprint("indexed ", before), func(t *testing.T) {
			byHand(t)
			testTTLSweep(t, before)
		})
	}
}

func testTTLSweep(t *testing.T, indexBefore bool) {
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	c := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "spool.db")
	s := openAt(t, path, WithTTL(time.Hour), WithClock(c.now))
	a := store.Namespace{Agent: "a"}
	b := store.Namespace{Agent: "b", Owner: "u"}
	seed(t, s, a.Key("old1"), t0, 3)
	seed(t, s, a.Key("old2"), t0, 3)
	seed(t, s, b.Key("old3"), t0, 3)
	approvalSession(t, s, a.Key("waiting"), t0)
	if indexBefore {
		catchUp(t, s)
	}
	c.advance(2 * time.Hour)

	// Creating a session sweeps its own namespace.
	seed(t, s, a.Key("new"), c.now(), 1)
	if n := rawCount(t, s, `SELECT count(*) FROM sessions WHERE agent = 'a'`); n != 2 {
		t.Fatalf("after a new session in the namespace a: %d sessions of a stored, want 2 (new and the one waiting on approval)", n)
	}
	if n := rawCount(t, s, `SELECT count(*) FROM sessions WHERE agent = 'b'`); n != 1 {
		t.Fatalf("a new session in the namespace a swept namespace b")
	}

	// Open sweeps everything.
	s.Close()
	s = openAt(t, path, WithTTL(time.Hour), WithClock(c.now))
	if n := rawCount(t, s, `SELECT count(*) FROM sessions`); n != 2 {
		t.Fatalf("after Open: %d sessions stored, want 2", n)
	}
	// Nothing of the swept sessions is left: entries and index rows went with them.
	if n := rawCount(t, s, `SELECT count(*) FROM entries`); n != 3 {
		t.Fatalf("after the sweeps: %d entries stored, want 3", n)
	}
	if indexBefore {
		if n := len(indexed(t, s, "answer")); n == 0 {
			t.Fatal("the swept sessions were never indexed: the test needs them to be")
		}
	}
	catchUp(t, s)
	if got, want := indexed(t, s, "message"), holding(t, s, "message"); len(got) != 1 || !slices.Equal(got, want) {
		t.Fatalf("after the sweeps: index rows %v match \"message\", want %v (new's)", got, want)
	}
	if got := indexed(t, s, "answer"); len(got) != 0 {
		t.Fatalf("after the sweeps: index rows %v match \"answer\", want none", got)
	}

	c.advance(2 * time.Hour)
	if n, err := s.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1 (new)", n, err)
	}
	// Without a TTL nothing expires.
	s.Close()
	s = openAt(t, path, WithClock(c.now))
	if n, err := s.Sweep(t.Context()); err != nil || n != 0 {
		t.Fatalf("Sweep without a TTL = %d, %v", n, err)
	}
	if page, err := s.List(t.Context(), a, store.ListOptions{}); err != nil || len(page.Sessions) != 1 {
		t.Fatalf("List without a TTL: %d sessions, %v", len(page.Sessions), err)
	}
}
