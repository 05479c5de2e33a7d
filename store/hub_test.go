package store_test

import (
	"context"
	"errors"
	"slices"
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

// A ListenFunc listener gets every message in order, on Notify's
// goroutine, nothing after stop, and nil once when dropped.
func TestHubListenFunc(t *testing.T) {
	var h store.Hub
	key := store.Key{Agent: "a", ID: "s"}
	ctx := t.Context()
	var got []string
	stop, err := h.ListenFunc(key, func(msg []byte) { got = append(got, string(msg)) })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := h.Notify(ctx, key, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"0", "1", "2"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	stop()
	stop() // safe twice
	_ = h.Notify(ctx, key, []byte("late"))
	if len(got) != 3 {
		t.Fatalf("called after stop: %q", got)
	}

	var drops int
	var msgs []string
	_, err = h.ListenFunc(key, func(msg []byte) {
		if msg == nil {
			drops++
			return
		}
		msgs = append(msgs, string(msg))
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Drop(key)
	h.DropAll()
	_ = h.Notify(ctx, key, []byte("after the drop"))
	if drops != 1 || len(msgs) != 0 {
		t.Fatalf("dropped listener: %d drops, messages %q; want 1 drop, none", drops, msgs)
	}
}

// store.ListenFunc gives a Notifier without ListenFunc the same contract
// through Listen: messages in order, nil once on a drop, nothing after
// stop.
func TestListenFuncFallback(t *testing.T) {
	n := &chanOnly{}
	key := store.Key{Agent: "a", ID: "s"}
	ctx := t.Context()
	msgs := make(chan []byte, 8)
	if _, err := store.ListenFunc(n, key, func(msg []byte) { msgs <- msg }); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_ = n.Notify(ctx, key, []byte(strconv.Itoa(i)))
	}
	for i := range 3 {
		if got := string(<-msgs); got != strconv.Itoa(i) {
			t.Fatalf("message %d is %q", i, got)
		}
	}
	n.hub.Drop(key)
	if got := <-msgs; got != nil {
		t.Fatalf("after a drop: %q, want nil", got)
	}

	stopped := make(chan []byte, 8)
	stop, err := store.ListenFunc(n, key, func(msg []byte) { stopped <- msg })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	_ = n.Notify(ctx, key, []byte("late"))
	n.hub.Drop(key)
	select {
	case m := <-stopped:
		t.Fatalf("called after stop with %q", m)
	default:
	}
	if _, err := store.ListenFunc(&basic{}, key, func([]byte) {}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a store without notifications: %v, want ErrUnsupported", err)
	}
}

// chanOnly is a Notifier with only Listen: a Hub's two methods.
type chanOnly struct {
	basic
	hub store.Hub
}

func (c *chanOnly) Notify(ctx context.Context, key store.Key, msg []byte) error {
	return c.hub.Notify(ctx, key, msg)
}

func (c *chanOnly) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	return c.hub.Listen(ctx, key)
}

// Listeners of one key come and go in any order: each stop takes away
// that listener only, the rest keep getting every message, and Listeners
// counts what is left.
func TestHubListenersComeAndGo(t *testing.T) {
	var h store.Hub
	key := store.Key{Agent: "a", ID: "s"}
	ctx := t.Context()
	got := make([][]string, 4)
	stops := make([]func(), 4)
	for i := range stops {
		stop, err := h.ListenFunc(key, func(msg []byte) { got[i] = append(got[i], string(msg)) })
		if err != nil {
			t.Fatal(err)
		}
		stops[i] = stop
	}
	for n, i := range []int{2, 0, 3, 1} {
		if err := h.Notify(ctx, key, []byte(strconv.Itoa(n))); err != nil {
			t.Fatal(err)
		}
		stops[i]()
		if l, _ := h.Listeners(key); l != 3-n {
			t.Fatalf("after %d stops: %d listeners, want %d", n+1, l, 3-n)
		}
	}
	want := map[int][]string{2: {"0"}, 0: {"0", "1"}, 3: {"0", "1", "2"}, 1: {"0", "1", "2", "3"}}
	for i, w := range want {
		if !slices.Equal(got[i], w) {
			t.Errorf("listener %d got %q, want %q", i, got[i], w)
		}
	}
}
