package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

var notifierChecks = []check{
	{"Notifier/Order", testNotifier},
	{"Notifier/Isolation", testNotifierIsolation},
	{"Notifier/LargeMessages", testNotifierLarge},
	{"Notifier/EveryListener", testNotifierFanout},
	{"Notifier/ClosesWithContext", testNotifierClose},
}

// notifyWait is how long a check waits for a notified message.
const notifyWait = 10 * time.Second

// Receive reads the next message of a store.Notifier listener's
// channel, failing t when none comes within ten seconds or the channel
// is closed; what names the message in the failure. A store's own tests
// of its notifications (across two handles on one database) use it.
func Receive(t testing.TB, ch <-chan []byte, what string) []byte {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the listener's channel was closed", what)
		}
		return msg
	case <-time.After(notifyWait):
		t.Fatalf("%s never came", what)
	}
	return nil
}

// silent checks that ch gets nothing more for a while (what it should
// have got came before a marker message it already had).
func silent(t *testing.T, ch <-chan []byte, what string) {
	t.Helper()
	select {
	case msg, ok := <-ch:
		if ok {
			t.Fatalf("%s got %q", what, truncated(msg))
		}
	case <-time.After(50 * time.Millisecond):
	}
}

func truncated(b []byte) []byte {
	if len(b) > 64 {
		return append(b[:64:64], "…"...)
	}
	return b
}

// testNotifier: a listener gets what is notified on its key from when
// Listen returned, in order.
func testNotifier(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	key := newNamespace().Key(name("sess"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := n.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	const count = 200
	for i := range count {
		if err := n.Notify(ctx, key, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("Notify %d: %v", i, err)
		}
	}
	for i := range count {
		if got, want := string(Receive(t, ch, fmt.Sprintf("message %d", i))), fmt.Sprintf("m%d", i); got != want {
			t.Fatalf("message %d: %q, want %q (out of order or lost)", i, got, want)
		}
	}
}

// testNotifierIsolation: a listener gets nothing of another key, also
// one with the same id in another namespace (another agent, another
// owner), nor of a message notified before it listened.
func testNotifierIsolation(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	ns := newNamespace()
	id := name("sess")
	key := ns.Key(id)
	others := []store.Key{
		ns.Key(name("other")),
		{Agent: name("agent"), ID: id},
		{Agent: ns.Agent, Owner: name("user"), ID: id},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := n.Notify(ctx, key, []byte("before")); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	ch, err := n.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	var otherChs []<-chan []byte
	for _, k := range others {
		c, err := n.Listen(ctx, k)
		if err != nil {
			t.Fatalf("Listen %s: %v", k, err)
		}
		otherChs = append(otherChs, c)
		if err := n.Notify(ctx, k, []byte("not yours")); err != nil {
			t.Fatalf("Notify %s: %v", k, err)
		}
	}
	if err := n.Notify(ctx, key, []byte("yours")); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got := Receive(t, ch, "the key's message"); string(got) != "yours" {
		t.Fatalf("the listener of %s got %q: a message of another key, or of before it listened", key, got)
	}
	for i, c := range otherChs {
		if got := Receive(t, c, "the other key's message"); string(got) != "not yours" {
			t.Fatalf("the listener of %s got %q", others[i], got)
		}
		silent(t, c, fmt.Sprintf("the listener of %s", others[i]))
	}
	silent(t, ch, "the listener of "+key.String())
}

// testNotifierLarge: messages of any length arrive whole and in order
// with short ones between them (a store whose transport limits a
// message's size splits them).
func testNotifierLarge(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	key := newNamespace().Key(name("sess"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := n.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	var sent [][]byte
	for i, size := range []int{7999, 8000, 8001, 20_000, 1, 100_000, 0, 1 << 20, 3} {
		msg := make([]byte, size)
		for j := range msg {
			msg[j] = byte(j*7 + i) // every byte value, NUL included
		}
		sent = append(sent, msg)
		if err := n.Notify(ctx, key, msg); err != nil {
			t.Fatalf("Notify %d bytes: %v", size, err)
		}
	}
	for i, want := range sent {
		if got := Receive(t, ch, fmt.Sprintf("message %d (%d bytes)", i, len(want))); !bytes.Equal(got, want) {
			t.Fatalf("message %d: %d bytes, want the %d sent", i, len(got), len(want))
		}
	}
}

// testNotifierFanout: every listener of a key gets every message.
func testNotifierFanout(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	key := newNamespace().Key(name("sess"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chs []<-chan []byte
	for range 3 {
		ch, err := n.Listen(ctx, key)
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		chs = append(chs, ch)
	}
	for i := range 5 {
		if err := n.Notify(ctx, key, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("Notify: %v", err)
		}
	}
	for l, ch := range chs {
		for i := range 5 {
			if got := string(Receive(t, ch, fmt.Sprintf("listener %d, message %d", l, i))); got != fmt.Sprintf("m%d", i) {
				t.Fatalf("listener %d, message %d: %q", l, i, got)
			}
		}
	}
}

// testNotifierClose: a listener's channel is closed when its context
// ends, and the key's other listeners go on.
func testNotifierClose(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	key := newNamespace().Key(name("sess"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stays, err := n.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	lctx, lcancel := context.WithCancel(ctx)
	ch, err := n.Listen(lctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	lcancel()
	deadline := time.After(notifyWait)
	for open := true; open; {
		select {
		case msg, ok := <-ch:
			if ok {
				t.Fatalf("after the end of its context the listener got %q", msg)
			}
			open = false
		case <-deadline:
			t.Fatal("the channel of a listener whose context ended is not closed")
		}
	}
	if err := n.Notify(ctx, key, []byte("still")); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	if got := Receive(t, stays, "the other listener's message"); string(got) != "still" {
		t.Fatalf("the other listener got %q", got)
	}
	done, dcancel := context.WithCancel(ctx)
	dcancel()
	if _, err := n.Listen(done, key); err == nil {
		t.Fatal("Listen with an ended context succeeded")
	}
}

// AfterDrop checks what a Notifier does when the connection behind a
// listener was dropped (a store's own test drops it): ch, the listener
// on key of handle two, is closed within wait without a message, and a
// listener made again on two gets what one notifies.
func AfterDrop(t testing.TB, one, two store.Notifier, key store.Key, ch <-chan []byte, wait time.Duration) {
	t.Helper()
	ctx := t.Context()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a message after the connection dropped")
		}
	case <-time.After(wait):
		t.Fatal("the listener of a dropped connection was not closed")
	}
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen after the drop: %v", err)
	}
	if err := one.Notify(ctx, key, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if got := Receive(t, ch, "again"); string(got) != "again" {
		t.Fatalf("after reconnecting: %q", got)
	}
}
