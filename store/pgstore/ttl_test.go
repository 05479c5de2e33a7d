package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// rawSessions counts the session rows of key's namespace with key's id, hidden
// or not.
func rawSessions(t *testing.T, s *Store, key store.Key) int {
	t.Helper()
	var n int
	err := admin(t).QueryRow(bg, s.sql(`SELECT (SELECT count(*) FROM {s}.sessions WHERE agent = $1 AND owner = $2 AND id = $3)
		+ (SELECT count(*) FROM {s}.entries WHERE agent = $1 AND owner = $2 AND session = $3)`),
		key.Agent, key.Owner, key.ID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTTL(t *testing.T) {
	clk := &clock{t: t0}
	s := newStore(t, WithTTL(time.Hour), WithClock(clk.Now))
	ns := store.Namespace{Agent: "a", Owner: "o"}
	idle, pending, fresh, idle2 := ns.Key("idle"), ns.Key("pending"), ns.Key("fresh"), ns.Key("idle2")

	ci := newChain(t, s, idle, t0)
	ci.user("idle words")
	newChain(t, s, idle2, t0).user("idle words too")
	cp := newChain(t, s, pending, t0)
	cp.user("pending words")
	cp.add(transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "p", Tool: "x"})
	cf := newChain(t, s, fresh, t0.Add(50*time.Minute))
	cf.user("fresh words")

	visibleIDs := func() []string {
		page, err := s.List(bg, ns, store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, i := range page.Sessions {
			ids = append(ids, i.ID)
		}
		return ids
	}
	if got := visibleIDs(); len(got) != 4 {
		t.Fatalf("before the TTL: %v", got)
	}

	clk.Set(t0.Add(61 * time.Minute))
	if got := visibleIDs(); len(got) != 2 || got[0] != "fresh" || got[1] != "pending" {
		t.Fatalf("after the TTL, List shows %v, want fresh and pending", got)
	}
	if got, err := s.Read(bg, idle); err != nil || len(got) != 0 {
		t.Fatalf("Read of an expired session: %d entries, %v", len(got), err)
	}
	if _, total, _ := s.ReadTail(bg, idle, 5); total != 0 {
		t.Fatalf("ReadTail of an expired session counts %d", total)
	}
	if _, err := s.Stat(bg, idle); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of an expired session: %v", err)
	}
	if hits, _ := s.Search(bg, ns, store.SearchQuery{Text: "words"}); len(hits) != 2 {
		t.Fatalf("Search after the TTL: %+v, want fresh and pending", hits)
	}
	// Kept with its approval pending, so the runtime can refuse it.
	if info, err := s.Stat(bg, pending); err != nil || info.PendingApprovals != 1 {
		t.Fatalf("Stat of an expired session with an approval pending: %+v, %v", info, err)
	}
	// An append continuing the hidden session conflicts: it has no head.
	if err := s.Append(bg, idle, ci.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "late"})); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("append to an expired session: %v", err)
	}
	if rawSessions(t, s, idle2) == 0 {
		t.Fatal("rows swept before any sweep ran")
	}

	// The same id starts afresh, and creating it sweeps the namespace.
	again := newChain(t, s, idle, t0.Add(61*time.Minute))
	again.user("a new start")
	got, err := s.Read(bg, idle)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, again.all)
	if n := rawSessions(t, s, idle2); n != 0 {
		t.Fatalf("creating a session left %d rows of an expired one in its namespace", n)
	}

	// Resolving the approval resets the clock and shows the session again
	// in full.
	cp.now = t0.Add(61 * time.Minute)
	cp.add(transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "p", Decision: transcript.VerdictAllow})
	clk.Set(t0.Add(2 * time.Hour))
	if info, err := s.Stat(bg, pending); err != nil || info.PendingApprovals != 0 || info.Entries != 3 {
		t.Fatalf("after the decision: %+v, %v", info, err)
	}

	// Sweep clears every namespace; a session with an approval pending stays.
	other := store.Key{Agent: "b", ID: "old"}
	newChain(t, s, other, clk.Now()).user("old")
	held := store.Key{Agent: "b", ID: "held"}
	ch := newChain(t, s, held, clk.Now())
	ch.add(transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "q", Tool: "x"})
	clk.Set(t0.Add(10 * time.Hour))
	n, err := s.Sweep(bg)
	if err != nil {
		t.Fatal(err)
	}
	// fresh, idle (restarted), pending (decided) and other are past the TTL.
	if n != 4 || rawSessions(t, s, other) != 0 || rawSessions(t, s, fresh) != 0 {
		t.Fatalf("Sweep deleted %d sessions, want 4", n)
	}
	if rawSessions(t, s, held) == 0 {
		t.Fatal("Sweep deleted a session with an approval pending")
	}
	if n, err := s.Sweep(bg); err != nil || n != 0 {
		t.Fatalf("second Sweep: %d, %v", n, err)
	}
}

func TestNoTTLKeepsEverything(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	newChain(t, s, key, time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)).user("old")
	if got, err := s.Read(bg, key); err != nil || len(got) != 1 {
		t.Fatalf("Read: %d, %v", len(got), err)
	}
	if n, err := s.Sweep(bg); err != nil || n != 0 {
		t.Fatalf("Sweep without TTL: %d, %v", n, err)
	}
}

// A batch that starts a session whose first entries are older than the
// TTL and whose last is not (an import of a session begun long ago and
// used lately) lands whole, as on SQLite; appended first entry alone, it
// left the session expired and the rest of the batch conflicted. One
// wholly past the TTL lands too, and is hidden, as an Append of it is.
func TestTTLBatchOfOldEntries(t *testing.T) {
	clk := &clock{t: t0.Add(3 * time.Hour)}
	s := newStore(t, WithTTL(time.Hour), WithClock(clk.Now))
	used, old := store.Key{Agent: "a", ID: "used"}, store.Key{Agent: "a", ID: "old"}
	entries := storetest.Chain("", t0, 6)
	entries = append(entries, storetest.Chain(storetest.Head(entries), t0.Add(150*time.Minute), 3)...)
	if err := s.AppendBatch(bg, used, entries); err != nil {
		t.Fatalf("AppendBatch of a session begun before the TTL: %v", err)
	}
	got, err := s.Read(bg, used)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, entries)
	if err := s.AppendBatch(bg, old, storetest.Chain("", t0, 6)); err != nil {
		t.Fatalf("AppendBatch of a session past the TTL: %v", err)
	}
	if got, err := s.Read(bg, old); err != nil || len(got) != 0 {
		t.Fatalf("Read of a session that arrived past the TTL: %d entries, %v", len(got), err)
	}
	// Its id starts afresh with a batch, as with Append.
	fresh := storetest.Chain("", clk.Now(), 3)
	if err := s.AppendBatch(bg, old, fresh); err != nil {
		t.Fatalf("AppendBatch over an expired session: %v", err)
	}
	if got, err := s.Read(bg, old); err != nil {
		t.Fatal(err)
	} else {
		equalEntries(t, got, fresh)
	}
}
