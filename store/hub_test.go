package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/spool-go/spool/store"
)

// drain reads ch until it is closed and checks that what it held is the
// messages 0, 1, ... in order; it returns how many.
func drain(t *testing.T, ch <-chan []byte) int {
	t.Helper()
	n := 0
	for msg := range ch {
		if got := string(msg); got != strconv.Itoa(n) {
			t.Fatalf("message %d is %q", n, got)
		}
		n++
	}
	return n
}

func recv(t *testing.T, ch <-chan []byte) []byte {
	t.Helper()
	msg, ok := <-ch
	if !ok {
		t.Fatal("the listener's channel was closed")
	}
	return msg
}

// A listener that reads nothing keeps the ListenBuffer messages it is
// behind, in order, and is dropped at the next one.
func TestHubDropsAtListenBuffer(t *testing.T) {
	var h store.Hub
	key := store.Key{Agent: "a", ID: "s"}
	ctx := t.Context()
	ch, err := h.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range store.ListenBuffer {
		if err := h.Notify(ctx, key, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	// other catches up before the next message: it is not dropped.
	for i := range store.ListenBuffer {
		if got := string(recv(t, other)); got != strconv.Itoa(i) {
			t.Fatalf("other: message %d is %q", i, got)
		}
	}
	if err := h.Notify(ctx, key, []byte(strconv.Itoa(store.ListenBuffer))); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, ch); n != store.ListenBuffer {
		t.Fatalf("the listener that read nothing got %d messages before it was dropped, want %d", n, store.ListenBuffer)
	}
	if got := string(recv(t, other)); got != strconv.Itoa(store.ListenBuffer) {
		t.Fatalf("other: last message is %q", got)
	}
}

// A listener reading while messages come gets them in order, whether
// they went straight to its channel or waited in its queue; if it fell
// too far behind, what it got is a prefix.
func TestHubOrderUnderLoad(t *testing.T) {
	var h store.Hub
	key := store.Key{Agent: "a", ID: "s"}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := h.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	const total = 3 * store.ListenBuffer
	got := make(chan int)
	go func() {
		n := 0
		for msg := range ch {
			if string(msg) != strconv.Itoa(n) {
				t.Errorf("message %d is %q", n, msg)
			}
			n++
			if n == total {
				cancel()
			}
		}
		got <- n
	}()
	for i := range total {
		if err := h.Notify(ctx, key, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-got; n > total {
		t.Fatalf("got %d messages of %d", n, total)
	}
}

// Ending a listener's context while messages wait in its queue closes its
// channel after a prefix of them.
func TestHubCancelWhileQueued(t *testing.T) {
	var h store.Hub
	key := store.Key{Agent: "a", ID: "s"}
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := h.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		h.Notify(t.Context(), key, []byte(strconv.Itoa(i)))
	}
	cancel()
	if n := drain(t, ch); n > 500 {
		t.Fatalf("got %d messages of 500", n)
	}
	// The key has no listener left: Notify reaches nobody and returns.
	if err := h.Notify(t.Context(), key, []byte("after")); err != nil {
		t.Fatal(err)
	}
}
