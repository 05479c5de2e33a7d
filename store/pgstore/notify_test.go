package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
)

// Two Stores on one schema are two processes: what one notifies, the
// other's listeners get through the server, in order, long messages
// whole (in chunks below NOTIFY's 8000 bytes); a Store on another schema
// of the database hears none of it.
func TestNotifyAcrossStores(t *testing.T) {
	schema := newSchema(t)
	one, two := openIn(t, schema), openIn(t, schema)
	elsewhere := openIn(t, newSchema(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := store.Key{Agent: "a", Owner: "o", ID: "s.DROP-TABLE_x"}
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	far, err := elsewhere.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i, size := range []int{10, 7990, 8000, 30_000, 5, 400_000, 0, 12} {
		msg := bytes.Repeat([]byte{byte(i), 0, 0xff, 'x'}, size/4+1)[:size]
		sent = append(sent, msg)
		if err := one.Notify(ctx, key, msg); err != nil {
			t.Fatalf("Notify %d bytes: %v", size, err)
		}
	}
	for i, want := range sent {
		if got := storetest.Receive(t, ch, fmt.Sprintf("message %d", i)); !bytes.Equal(got, want) {
			t.Fatalf("message %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	select {
	case msg := <-far:
		t.Fatalf("a store on another schema heard %q", msg[:min(len(msg), 20)])
	case <-time.After(100 * time.Millisecond):
	}
	// The channel names no id.
	if name := one.channelName(key); strings.Contains(name, "DROP") || !strings.HasPrefix(name, "spool_") || len(name) > 63 {
		t.Fatalf("channel name %q", name)
	}
}

// When the listening connection drops, listeners are dropped (their
// channels closed: what was notified meanwhile may be lost), and a new
// Listen gets messages again over a new connection.
func TestNotifyReconnects(t *testing.T) {
	schema := newSchema(t)
	one, two := openIn(t, schema), openIn(t, schema)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Notify(ctx, key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "first")
	// Kill the listening backend, as a server restart or a proxy would.
	tag, err := admin(t).Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND query LIKE '%`+two.channelName(key)+`%'`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminating the listening backend: %v (%d)", err, tag.RowsAffected())
	}
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// A Store's own messages reach its listeners once, not again when the
// server passes them back.
func TestNotifyOwnOnce(t *testing.T) {
	s := openIn(t, newSchema(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := s.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"one", strings.Repeat("long", 5000), "two"} {
		if err := s.Notify(ctx, key, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"one", strings.Repeat("long", 5000), "two"} {
		if got := storetest.Receive(t, ch, "own message"); string(got) != want {
			t.Fatalf("got %d bytes, want %d", len(got), len(want))
		}
	}
	select {
	case msg := <-ch:
		t.Fatalf("an own message came twice: %q", msg[:min(len(msg), 20)])
	case <-time.After(300 * time.Millisecond):
	}
}

// Many sessions notifying at once share flights (see send): each
// session's messages still reach the other Store's listener in order and
// whole, long ones (in chunks) and one longer than a flight among them.
func TestNotifyFlights(t *testing.T) {
	schema := newSchema(t)
	one, two := openIn(t, schema), openIn(t, schema)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const keys, perKey = 8, 12
	msg := func(k, i int) []byte {
		size := [...]int{3, 9000, 40, flightBytes + 5000}[(k+i)%4]
		if size > flightBytes && k != 0 {
			size = 100
		}
		return bytes.Repeat([]byte{byte(k), byte(i)}, size/2+1)[:size]
	}
	chans := make([]<-chan []byte, keys)
	for k := range keys {
		var err error
		if chans[k], err = two.Listen(ctx, store.Key{Agent: "a", ID: fmt.Sprint("s", k)}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, keys)
	for k := range keys {
		go func() {
			for i := range perKey {
				if err := one.Notify(ctx, store.Key{Agent: "a", ID: fmt.Sprint("s", k)}, msg(k, i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for k := range keys {
		for i := range perKey {
			if got, want := storetest.Receive(t, chans[k], fmt.Sprintf("session %d message %d", k, i)), msg(k, i); !bytes.Equal(got, want) {
				t.Fatalf("session %d message %d: %d bytes starting %v, want %d starting %v", k, i, len(got), got[:min(2, len(got))], len(want), want[:2])
			}
		}
	}
}

// A flight the server refuses a statement of is sent again a message at
// a time: the message it will not take fails alone, the others go.
func TestNotifyFlightRefused(t *testing.T) {
	schema := newSchema(t)
	one, two := openIn(t, schema), openIn(t, schema)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := store.Key{Agent: "a", ID: "s"}
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	n := &one.notify
	n.init()
	name := one.channelName(key)
	good := &note{channel: name, chunks: encodeChunks(n.tag, 1, []byte("good")), done: make(chan error, 1)}
	// NOTIFY takes no payload of 8000 bytes or more.
	bad := &note{channel: name, chunks: []string{strings.Repeat("x", 9000)}, done: make(chan error, 1)}
	n.sendMu.Lock()
	n.queue, n.flying = []*note{bad, good}, true
	n.sendMu.Unlock()
	one.fly()
	if err := <-bad.done; err == nil {
		t.Fatal("a payload of 9000 bytes was taken")
	}
	if err := <-good.done; err != nil {
		t.Fatalf("the message flying with a refused one: %v", err)
	}
	if got := storetest.Receive(t, ch, "the good message"); string(got) != "good" {
		t.Fatalf("got %q", got)
	}
	n.sendMu.Lock()
	defer n.sendMu.Unlock()
	if n.flying || len(n.queue) != 0 {
		t.Fatalf("after the flights: flying %v, %d queued", n.flying, len(n.queue))
	}
}

// FuzzDecodeChunk: any payload is taken in without a panic; the
// payloads Notify makes come out as the message.
func FuzzDecodeChunk(f *testing.F) {
	f.Add("t 1 0 1 aGk=", []byte("hi"))
	f.Add("t 1 0 2 aG", []byte{})
	f.Add("x y z w v", []byte{0})
	f.Fuzz(func(t *testing.T, payload string, msg []byte) {
		var n notifier
		n.init()
		n.decodeChunk("own", payload)
		var got []byte
		var done int
		for _, c := range encodeChunks("peer", 7, msg) {
			if m, ok := n.decodeChunk("own", c); ok {
				got, done = m, done+1
			}
		}
		if done != 1 || !bytes.Equal(got, msg) {
			t.Fatalf("%d messages; %q for %q", done, got, msg)
		}
	})
}
