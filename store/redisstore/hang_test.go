package redisstore_test

import (
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// A pub/sub connection that hung comes back when the network does: its
// listeners are closed (messages may have been lost meanwhile), never
// left silent on a connection go-redis replaced, and a new Listen gets
// messages. (While the network stays hung the listener is silent: go-redis
// learns of a dead pub/sub connection only from a failed write.)
func TestNotifyAfterHang(t *testing.T) {
	one := newStore(t)
	p, u := startProxy(t)
	two, err := redisstore.Open(t.Context(), u, redisstore.WithPrefix(one.Prefix()))
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
	p.freeze(true)
	if err := one.Notify(t.Context(), key, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // past go-redis's pub/sub health check (3s)
	p.freeze(false)
	storetest.AfterDrop(t, one, two, key, ch, 15*time.Second)
}
