package pgstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestAppendReadExact(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "support", Owner: "alice@example.com", ID: "s1"}
	if got, err := s.Read(bg, key); err != nil || len(got) != 0 {
		t.Fatalf("unknown session: %v, %v", got, err)
	}
	c := newChain(t, s, key, t0)
	c.user("Where is <order> 1042?\x00 and \u2028")
	c.assistant("It ships today.")
	// Entries another writer may hand in: nanosecond timestamps and the
	// latest one a store keeps, a status, data with bytes that are not
	// UTF-8, an unknown type.
	e := c.entry(transcript.TypeTurnEnd, transcript.TurnEnd{DurationMs: 5})
	e.Status = transcript.StatusOK
	e.Timestamp = e.Timestamp.Add(7)
	c.put(e)
	e = c.entry("x.custom", nil)
	e.Data = json.RawMessage("{\"raw\":\"\xff\xfe\"}")
	c.put(e)
	e = c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "from the future"})
	e.Timestamp = time.Date(3000, 1, 1, 0, 0, 0, 1, time.UTC)
	// Past what unix nanoseconds hold: every store refuses it.
	if err := s.Append(bg, key, e); !errors.Is(err, store.ErrInvalidEntry) {
		t.Fatalf("append at year 3000: %v, want ErrInvalidEntry", err)
	}
	e.Timestamp = storekit.MaxTimestamp
	c.put(e)

	got, err := s.Read(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, c.all)
	if string(got[3].Data) != string(c.all[3].Data) {
		t.Fatalf("data bytes changed: %q", got[3].Data)
	}

	info, err := s.Stat(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if want := storekit.Info(key, c.all); info != want {
		t.Fatalf("Stat:\n got %+v\nwant %+v", info, want)
	}
}

func TestSessionInfo(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	c := newChain(t, s, key, t0)
	c.add(transcript.TypeSessionMode, transcript.SessionMode{ToolMode: transcript.ToolModeAsk})
	c.user("   ")
	c.user("  Hello\n\tthere,   " + strings.Repeat("long ", 40))
	c.assistant("hi")
	c.add(transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "p1", Tool: "x"})
	c.add(transcript.TypeApprovalRequest, transcript.ApprovalRequest{ApprovalID: "p2", Tool: "x"})
	c.add(transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "p1", Decision: transcript.VerdictAllow})
	c.add(transcript.TypeToolResult, transcript.ToolResult{CallID: "c"})
	// An entry stamped earlier than the last does not move activity back.
	e := c.entry(transcript.TypeGovernanceNotice, transcript.GovernanceNotice{Kind: "x"})
	e.Timestamp = t0.Add(-time.Hour)
	c.put(e)
	c.add(transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "p2", Decision: transcript.VerdictDeny})
	c.add(transcript.TypeApprovalDecision, transcript.ApprovalDecision{ApprovalID: "p3", Decision: transcript.VerdictDeny})

	want := storekit.Info(key, c.all)
	got, err := s.Stat(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Stat:\n got %+v\nwant %+v", got, want)
	}
	page, err := s.List(bg, key.Namespace(), store.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0] != want {
		t.Fatalf("List: %+v, %v; want %+v", page, err, want)
	}
	if _, err := s.Stat(bg, store.Key{Agent: "a", ID: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Stat of unknown session: %v", err)
	}
}

func TestConflicts(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	c := newChain(t, s, key, t0)
	first := c.user("one")
	c.assistant("two")

	stale := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "stale"})
	stale.ParentID = first.ID
	err := s.Append(bg, key, stale)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), c.head) {
		t.Fatalf("stale parent: %v", err)
	}
	again := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "again"})
	again.ParentID = ""
	if err := s.Append(bg, key, again); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second first entry: %v", err)
	}
	orphan := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "x"})
	orphan.ParentID = "nothing"
	if err := s.Append(bg, store.Key{Agent: "a", ID: "other"}, orphan); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("parent on an unknown session: %v", err)
	}
	if got, _ := s.Read(bg, store.Key{Agent: "a", ID: "other"}); len(got) != 0 {
		t.Fatalf("failed append left %d entries", len(got))
	}
	bad := c.entry(transcript.TypeUserMessage, nil)
	bad.ID = ""
	if err := s.Append(bg, key, bad); !errors.Is(err, store.ErrInvalidEntry) {
		t.Fatalf("entry without id: %v", err)
	}
	got, err := s.Read(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, c.all)
}

func TestInvalidKeys(t *testing.T) {
	s := newStore(t)
	e, _ := transcript.New(t0, transcript.TypeUserMessage, "t", transcript.UserMessage{Text: "x"})
	for _, id := range []string{"", "../x", "a/b", "..", strings.Repeat("x", 200), "a\x00b", "a:b", "a'; DROP TABLE x; --"} {
		key := store.Key{Agent: "a", ID: id}
		if err := s.Append(bg, key, e); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Append(%q): %v", id, err)
		}
		if _, err := s.Read(bg, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Read(%q): %v", id, err)
		}
		if err := s.Delete(bg, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v", id, err)
		}
		if _, err := s.Lock(bg, key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Lock(%q): %v", id, err)
		}
		if _, err := s.List(bg, store.Namespace{Agent: id}, store.ListOptions{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("List(agent %q): %v", id, err)
		}
		if _, err := s.List(bg, store.Namespace{Agent: "a", Owner: id}, store.ListOptions{}); id != "" && !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("List(owner %q): %v", id, err)
		}
	}
}

func TestDeleteAndOwnerIsolation(t *testing.T) {
	s := newStore(t)
	a := store.Key{Agent: "a", Owner: "alice", ID: "s"}
	b := store.Key{Agent: "a", Owner: "bob", ID: "s"}
	p := store.Key{Agent: "a", ID: "s"}
	ca := newChain(t, s, a, t0)
	ca.user("alice's secret")
	cp := newChain(t, s, p, t0)
	cp.user("project")

	if got, _ := s.Read(bg, b); len(got) != 0 {
		t.Fatalf("bob read alice's session: %v", got)
	}
	if page, _ := s.List(bg, b.Namespace(), store.ListOptions{}); len(page.Sessions) != 0 {
		t.Fatalf("bob lists %v", page.Sessions)
	}
	if err := s.Delete(bg, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read(bg, a); len(got) != 1 {
		t.Fatalf("bob's delete reached alice: %d entries left", len(got))
	}

	if err := s.Delete(bg, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read(bg, a); len(got) != 0 {
		t.Fatalf("deleted session reads %d entries", len(got))
	}
	if got, _ := s.Read(bg, p); len(got) != 1 {
		t.Fatal("deleting alice's session reached the project's")
	}
	// The same id starts empty, and nothing of the old session returns.
	ca2 := newChain(t, s, a, t0.Add(time.Hour))
	ca2.user("new")
	got, err := s.Read(bg, a)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, ca2.all)
	if info, _ := s.Stat(bg, a); info.Entries != 1 || info.Title != "new" {
		t.Fatalf("recreated session info %+v", info)
	}
}

func TestReadRangeAndTail(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	c := newChain(t, s, key, t0)
	for i := range 30 {
		c.user(fmt.Sprint("m", i))
	}
	for _, tt := range []struct{ start, end, from, to int }{
		{0, 30, 0, 30}, {5, 10, 5, 10}, {-5, 3, 0, 3}, {25, 99, 25, 30}, {40, 50, 30, 30}, {7, 3, 7, 7},
	} {
		got, total, err := s.ReadRange(bg, key, tt.start, tt.end)
		if err != nil || total != 30 {
			t.Fatalf("ReadRange(%d,%d): total %d, %v", tt.start, tt.end, total, err)
		}
		equalEntries(t, got, c.all[tt.from:tt.to])
	}
	for _, n := range []int{0, 1, 10, 30, 100, -1} {
		got, total, err := s.ReadTail(bg, key, n)
		if err != nil || total != 30 {
			t.Fatalf("ReadTail(%d): total %d, %v", n, total, err)
		}
		equalEntries(t, got, c.all[30-min(max(n, 0), 30):])
	}
	got, total, err := s.ReadTail(bg, store.Key{Agent: "a", ID: "none"}, 5)
	if err != nil || total != 0 || len(got) != 0 {
		t.Fatalf("ReadTail of unknown session: %v %d %v", got, total, err)
	}
}

func TestNamespaces(t *testing.T) {
	s := newStore(t)
	for _, k := range []store.Key{{Agent: "b", ID: "1"}, {Agent: "a", Owner: "u", ID: "1"}, {Agent: "a", ID: "1"}, {Agent: "a", ID: "2"}} {
		newChain(t, s, k, t0).user("x")
	}
	got, err := s.Namespaces(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Namespace{{Agent: "a"}, {Agent: "a", Owner: "u"}, {Agent: "b"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Namespaces = %v, want %v", got, want)
	}
}
