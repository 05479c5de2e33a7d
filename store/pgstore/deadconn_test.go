package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// After the network to Postgres was cut and came back, the pool still
// holds the connections that died: the first Append, AppendBatch or Read
// must not fail for having taken one, nor store anything twice.
func TestDeadPooledConnection(t *testing.T) {
	schema := newSchema(t)
	p, u := faultnet.New(t, testURL(t))
	via, err := Open(t.Context(), u, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { via.Close() })
	key := store.Key{Agent: "a", ID: "dead"}
	c := newChain(t, via, key, time.Now())
	c.user("one")
	for i, op := range []string{"read", "append", "batch", "first"} {
		p.Cut()
		switch op {
		case "batch":
			a := c.entry(transcript.TypeUserMessage, transcript.UserMessage{Text: "three"})
			a.ParentID = c.head
			b := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "four"})
			b.ParentID = a.ID
			if err := via.AppendBatch(t.Context(), key, []transcript.Entry{a, b}); err != nil {
				t.Fatalf("%d: AppendBatch after the connections were cut: %v", i, err)
			}
			c.head, c.all = b.ID, append(c.all, a, b)
		case "first":
			other := newChain(t, via, store.Key{Agent: "a", ID: "new"}, time.Now())
			other.user("one")
		case "append":
			e := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
			if err := via.Append(t.Context(), key, e); err != nil {
				t.Fatalf("%d: Append after the connections were cut: %v", i, err)
			}
			c.head, c.all = e.ID, append(c.all, e)
		case "read":
			got, err := via.Read(t.Context(), key)
			if err != nil {
				t.Fatalf("%d: Read after the connections were cut: %v", i, err)
			}
			equalEntries(t, got, c.all)
		}
	}
	got, err := via.Read(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, c.all) // each entry once
}

// A resent append (againOnLostConn) whose first try committed, and after
// which another writer appended already, is appended: its conflict is not
// one. Any other conflict stands.
func TestResentAppendAfterAnotherWriter(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "s"}
	c := newChain(t, s, key, time.Now())
	c.user("one")
	ours := c.assistant("two") // the first try, committed
	c.user("three")            // another writer's, after it
	if err := s.conflict(t.Context(), key, ours, ours.ID); err != nil {
		t.Fatalf("the resend of an entry the session holds: %v, want nil", err)
	}
	if err := s.conflict(t.Context(), key, ours, ""); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a conflict of an append not resent: %v, want store.ErrConflict", err)
	}
	other := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "never appended"})
	if err := s.conflict(t.Context(), key, other, other.ID); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("the resend of an entry the session does not hold: %v, want store.ErrConflict", err)
	}
}
