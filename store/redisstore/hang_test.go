package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/faultnet"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// A pub/sub connection that hung comes back when the network does: its
// listeners are closed (messages may have been lost meanwhile), never
// left silent on a connection go-redis replaced, and a new Listen gets
// messages. (While the network stays hung the listener is silent: the
// connections that replace the hung one hang too.)
func TestNotifyAfterHang(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 200*time.Millisecond)
	one := newStore(t)
	p, u := startProxy(t)
	two, key, ch := listening(t, one, u)
	p.freeze(true)
	if err := one.Notify(t.Context(), key, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the hung connection is replaced, more than once
	p.freeze(false)
	storetest.AfterDrop(t, one, two, key, ch, 15*time.Second)
}

// A pub/sub connection that hangs for good while the network carries new
// connections (a NAT or a firewall that forgot it, a failover that moved
// the server's address) is found by the keep-alive check and replaced:
// its listeners are closed (a message was lost meanwhile), within twice
// the keep-alive, and a new Listen gets messages. Nothing would tell
// go-redis: its health check's PING is a write, which the socket takes.
func TestNotifyHungForGood(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 500*time.Millisecond)
	one := newStore(t)
	p, u := faultnet.New(t, redisURL(t))
	two, key, ch := listening(t, one, u)
	p.Hang()
	if err := one.Notify(t.Context(), key, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// listening opens a second store at u (a proxy's address) on one's keys,
// listens there to a session and sees a first message of one's arrive.
func listening(t *testing.T, one *redisstore.Store, u string) (*redisstore.Store, store.Key, <-chan []byte) {
	t.Helper()
	two, err := redisstore.Open(t.Context(), u, redisstore.WithPrefix(one.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })
	key := store.Key{Agent: "a", ID: "s"}
	return two, key, heard(t, one, two, key)
}

// heard listens on two to key and sees a first message of one's arrive.
func heard(t *testing.T, one, two *redisstore.Store, key store.Key) <-chan []byte {
	t.Helper()
	ch, err := two.Listen(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Notify(t.Context(), key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "first")
	return ch
}

// A listener that goes away while the network is hung, after its
// connection was replaced by one that could not be made yet, leaves no
// subscribe reply counted that will never come: once the network is
// back, a new Listen to its session is confirmed by its own.
func TestListenAfterLeavingWhileHung(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 100*time.Millisecond)
	one := newStore(t)
	p, u := faultnet.New(t, redisURL(t))
	// The connections that replace the hung one give up soon.
	two, err := redisstore.Open(t.Context(), u+"?read_timeout=100ms&dial_timeout=100ms", redisstore.WithPrefix(one.Prefix()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })
	key := store.Key{Agent: "a", ID: "s"}
	lctx, leave := context.WithCancel(t.Context())
	ch, err := two.Listen(lctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Notify(t.Context(), key, []byte("first")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "first")
	p.Freeze(true)
	time.Sleep(time.Second) // the connection is found hung and replaced
	leave()
	time.Sleep(time.Second) // its UNSUBSCRIBE is tried, and fails
	p.Freeze(false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ch, err = two.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen after the network came back: %v", err)
	}
	if err := one.Notify(t.Context(), key, []byte("again")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "again")
}

// A pub/sub connection that is silent but healthy answers the keep-alive
// PING and is kept: its listener is not dropped and gets what comes
// after the silence.
func TestNotifySilentKept(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, 500*time.Millisecond)
	one := newStore(t)
	_, u := faultnet.New(t, redisURL(t))
	_, key, ch := listening(t, one, u)
	time.Sleep(3 * time.Second) // checked more than once
	if err := one.Notify(t.Context(), key, []byte("after")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "after")
}

// A listener that goes away before its subscription is confirmed, the
// connection then dropped (go-redis makes another and subscribes again
// the channels still listened to), leaves no subscribe reply counted
// that will never come: a new Listen to its session is confirmed by its
// own. The reply lost with the old connection stayed counted, and every
// later Listen to the session took its own reply for it and waited until
// its context ended.
func TestListenAfterLeavingBeforeReconnect(t *testing.T) {
	redisstore.SetNotifyKeepAlive(t, time.Minute) // no keep-alive check: go-redis reconnects
	one := newStore(t)
	p, u := startProxy(t)
	two, _, _ := listening(t, one, u) // the pub/sub connection is made
	key := store.Key{Agent: "a", ID: "left"}
	p.freeze(true)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	if _, err := two.Listen(ctx, key); err == nil {
		t.Fatal("a Listen confirmed while the network was frozen")
	}
	cancel() // and its UNSUBSCRIBE is sent
	time.Sleep(100 * time.Millisecond)
	p.freeze(false) // the connection is cut; go-redis makes another
	time.Sleep(500 * time.Millisecond)
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ch, err := two.Listen(ctx, key)
	if err != nil {
		t.Fatalf("Listen after the connection came back: %v", err)
	}
	if err := one.Notify(t.Context(), key, []byte("again")); err != nil {
		t.Fatal(err)
	}
	storetest.Receive(t, ch, "again")
}
