package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// testNotifier: a listener gets what is notified on its key from when
// Listen returned, in order, and nothing of other keys; its channel is
// closed when its context ends.
func testNotifier(t *testing.T, s store.Store) {
	n := skipUnless[store.Notifier](t, s)
	ns := newNamespace()
	key, other := ns.Key(name("sess")), ns.Key(name("other"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := n.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if err := n.Notify(ctx, other, []byte("not yours")); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	const count = 50
	for i := range count {
		if err := n.Notify(ctx, key, fmt.Appendf(nil, "m%d", i)); err != nil {
			t.Fatalf("Notify %d: %v", i, err)
		}
	}
	for i := range count {
		select {
		case msg, ok := <-ch:
			if want := fmt.Sprintf("m%d", i); !ok || string(msg) != want {
				t.Fatalf("message %d: %q (open %v), want %q", i, msg, ok, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d never came", i)
		}
	}
	cancel()
	for {
		select {
		case msg, ok := <-ch:
			if !ok {
				return
			}
			t.Fatalf("after the end of its context the listener got %q", msg)
		case <-time.After(10 * time.Second):
			t.Fatal("the channel of a listener whose context ended is not closed")
		}
	}
}
