package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// A listening connection that hangs (the network drops everything, no
// reset ever comes) is found by the keep-alive check, which must give up
// rather than wait for ever: the listeners are closed, and a new Listen
// works once the network is back.
func TestNotifyHungConnection(t *testing.T) {
	keepAlive := notifyKeepAlive
	notifyKeepAlive = 200 * time.Millisecond
	t.Cleanup(func() { notifyKeepAlive = keepAlive })
	schema := newSchema(t)
	one := openIn(t, schema)
	p, u := faultnet.New(t, testURL(t))
	two, err := Open(t.Context(), u, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Notify(t.Context(), key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "first")
	p.Freeze(true)
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a message through a hung connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener of a hung connection was neither closed nor given messages: a watcher would wait in silence for ever")
	}
	p.Freeze(false)
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// The server committed an append and the connection was cut before its
// reply came back. Append must not report a plain failure (the entry is
// in the session): it finds out, and says so; a retry of the same entry
// does not store it twice.
func TestAppendReplyLost(t *testing.T) {
	schema := newSchema(t)
	direct := openIn(t, schema)
	p, u := faultnet.New(t, testURL(t))
	via, err := Open(t.Context(), u, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { via.Close() })
	key := store.Key{Agent: "a", ID: "lost"}
	c := newChain(t, via, key, time.Now())
	first := c.user("one")
	e := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
	cut := p.CutReply("INSERT 0 1")
	err = via.Append(t.Context(), key, e)
	select {
	case <-cut:
	default:
		t.Fatalf("the reply was not cut (Append: %v)", err)
	}
	if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Append whose reply was lost after the commit: %v; want nil (the entry is in the session) or ErrOutcomeUnknown", err)
	}
	// A caller that retries the same entry: it is not stored twice.
	if err := via.Append(t.Context(), key, e); err != nil && !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retrying the append: %v", err)
	}
	got, err := direct.Read(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, []transcript.Entry{first, e})
}

// A batch whose context ended before it was sent is not appended, and
// says so: not ErrOutcomeUnknown, which would send its caller to find out.
func TestAppendBatchCancelledNotUnknown(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "cancelled"}
	c := newChain(t, s, key, time.Now())
	first := c.user("one")
	e1 := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
	e2 := e1
	e2.ID, e2.ParentID = transcript.NewID(time.Now().Add(time.Second)), e1.ID
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.AppendBatch(ctx, key, []transcript.Entry{e1, e2})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("AppendBatch with a cancelled context = %v; want context.Canceled, not ErrOutcomeUnknown", err)
	}
	got, err := s.Read(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	equalEntries(t, got, []transcript.Entry{first})
}
