package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// second opens another Store on s's prefix: another process. Its
// connections are named after the prefix (client_name), for killPubSub.
func second(t *testing.T, s *redisstore.Store) *redisstore.Store {
	t.Helper()
	u, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("client_name", s.Prefix())
	u.RawQuery = q.Encode()
	o, err := redisstore.Open(context.Background(), u.String(), redisstore.WithPrefix(s.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

// What one Store publishes, another on the same prefix gets, in order and
// whole; a Store of another prefix gets none of it.
func TestNotifyAcrossStores(t *testing.T) {
	one := newStore(t)
	two, other := second(t, one), newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := store.Key{Agent: "a", Owner: "o", ID: "s"}
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	far, err := other.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i, size := range []int{1, 9000, 0, 300_000, 7} {
		msg := bytes.Repeat([]byte{byte(i), 0, 0xff}, size/3+1)[:size]
		sent = append(sent, msg)
		if err := one.Notify(ctx, key, msg); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range sent {
		if got := storetest.Receive(t, ch, fmt.Sprintf("message %d", i)); !bytes.Equal(got, want) {
			t.Fatalf("message %d: %d bytes, want %d", i, len(got), len(want))
		}
	}
	select {
	case msg := <-far:
		t.Fatalf("a store of another prefix heard %d bytes", len(msg))
	case <-time.After(100 * time.Millisecond):
	}
}

// When the pub/sub connection drops (CLIENT KILL), go-redis subscribes
// again and the listeners of then are dropped (messages may have been
// lost meanwhile); a new Listen gets messages again.
func TestNotifyReconnects(t *testing.T) {
	one := newStore(t)
	two := second(t, one)
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
	// Only this test's connection: the database is shared.
	list, err := one.Client().ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+one.Prefix()+" ") && strings.Contains(line, " sub=1 ") {
			f := strings.Fields(line)
			id, _ := strings.CutPrefix(f[0], "id=")
			if err := one.Client().Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed != 1 {
		t.Fatalf("killed %d pub/sub connections of the store, want 1:\n%s", killed, list)
	}
	storetest.AfterDrop(t, one, two, key, ch, 15*time.Second)
}

// Listeners that come and go at once on the same sessions leave each
// channel subscribed exactly while it has listeners: once they are all
// gone no subscription is left, and a new Listen is confirmed by its own
// SUBSCRIBE and hears what follows. (Listen and unlisten send their
// commands outside the notifier's mutex, each connection's in the order
// of its channels' changes.)
func TestListenChurn(t *testing.T) {
	one := newStore(t)
	two := second(t, one)
	keys := []store.Key{{Agent: "a", ID: "s1"}, {Agent: "a", ID: "s2"}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				ctx, cancel := context.WithCancel(t.Context())
				if _, err := two.Listen(ctx, keys[(g+i)%len(keys)]); err != nil {
					t.Error(err)
				}
				if i%3 == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	for _, key := range keys {
		name := redisstore.LiveChannel(two, key)
		waitFor(t, 5*time.Second, "no subscription to "+name, func() bool {
			n, err := one.Client().PubSubNumSub(t.Context(), name).Result()
			return err == nil && n[name] == 0
		})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		ch, err := two.Listen(ctx, key)
		if err != nil {
			t.Fatalf("Listen after the churn: %v", err)
		}
		if err := one.Notify(t.Context(), key, []byte("after")); err != nil {
			t.Fatal(err)
		}
		storetest.Receive(t, ch, "after")
		cancel()
	}
}

// A Listen that joins another's subscription of a session, still
// unconfirmed, fails when the SUBSCRIBE could not be sent, as the first
// does; it waited, for a confirmation that never came, until its own
// context ended. The next Listen subscribes afresh and hears.
func TestListenJoiningAFailedSubscribe(t *testing.T) {
	s := newStore(t)
	key := store.Key{Agent: "a", ID: "joined"}
	errSend := errors.New("the SUBSCRIBE could not be sent")
	entered, proceed := make(chan struct{}), make(chan struct{})
	restore := redisstore.FailListenSubscribe(s, key, func() { close(entered); <-proceed }, errSend)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := s.Listen(ctx, key)
		first <- err
	}()
	<-entered
	joined := make(chan error, 1)
	go func() {
		_, err := s.Listen(ctx, key)
		joined <- err
	}()
	for redisstore.Listeners(s, key) < 2 {
		time.Sleep(time.Millisecond)
	}
	close(proceed)
	if err := <-first; !errors.Is(err, errSend) {
		t.Fatalf("the Listen whose SUBSCRIBE failed: %v, want %v", err, errSend)
	}
	select {
	case err := <-joined:
		if !errors.Is(err, errSend) {
			t.Fatalf("the Listen that joined it: %v, want %v", err, errSend)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Listen that joined a failed subscription still waits")
	}
	restore()
	if n := redisstore.Listeners(s, key); n != 0 {
		t.Fatalf("%d listeners counted after both failed", n)
	}
	ch, err := s.Listen(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Notify(ctx, key, []byte("heard")); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Receive(t, ch, "a message after the failure"); string(got) != "heard" {
		t.Fatalf("got %q", got)
	}
}

// A Listen waiting for its subscription's confirmation when the store
// closes fails at once; it waited until its context ended.
func TestListenWaitingWhenClosed(t *testing.T) {
	s := second(t, newStore(t)) // closed here; the first cleans up
	key := store.Key{Agent: "a", ID: "unconfirmed"}
	sent := make(chan struct{})
	defer redisstore.FailListenSubscribe(s, key, func() { close(sent) }, nil)()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := s.Listen(ctx, key)
		got <- err
	}()
	<-sent
	time.Sleep(10 * time.Millisecond) // Listen waits for the confirmation
	s.Close()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("a Listen waiting when the store closed: %v, want the store closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Listen waiting for its confirmation still waits after Close")
	}
}

// A Listen whose context ends while it waits to send its SUBSCRIBE
// (behind another Listen's, on the same connection) fails alone: the
// connection's other listeners are kept. Its SUBSCRIBE was written with
// a deadline already past, which failed, and go-redis closed the
// connection and subscribed again on a new one: every listener of the
// store was dropped.
func TestListenEndingBeforeItsSubscribe(t *testing.T) {
	one := newStore(t)
	two := second(t, one)
	key := store.Key{Agent: "a", ID: "kept"}
	ch := heard(t, one, two, key)

	slow := store.Key{Agent: "a", ID: "slow"}
	entered, proceed := make(chan struct{}), make(chan struct{})
	defer redisstore.FailListenSubscribe(two, slow, func() { close(entered); <-proceed }, nil)()
	sctx, scancel := context.WithCancel(t.Context())
	defer scancel()
	go two.Listen(sctx, slow) // holds the connection while its SUBSCRIBE goes
	<-entered

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := two.Listen(ctx, store.Key{Agent: "a", ID: "late"})
		got <- err
	}()
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond)
	close(proceed)
	if err := <-got; err == nil {
		t.Fatal("a Listen whose context ended before its SUBSCRIBE went was confirmed")
	}
	time.Sleep(200 * time.Millisecond) // a reconnection's confirmation would drop it
	if err := one.Notify(t.Context(), key, []byte("still")); err != nil {
		t.Fatal(err)
	}
	if msg := storetest.Receive(t, ch, "a message to the other listener"); string(msg) != "still" {
		t.Fatalf("got %q", msg)
	}
}
