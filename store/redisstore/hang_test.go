package redisstore_test

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/store/storetest"
)

// freezer is a TCP proxy in front of Redis whose connections can be made
// to hang: kept open, forwarding nothing, as a network that drops packets
// without a reset.
type freezer struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen bool
	conns  []net.Conn
}

func startFreezer(t *testing.T) (*freezer, string) {
	u, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "redis" {
		t.Skipf("the proxy speaks plain TCP, not %s", u.Scheme)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.relay(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.freeze(false)
	})
	return f, u.String()
}

func (f *freezer) relay(c net.Conn) {
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	f.conns = append(f.conns, c, up)
	f.mu.Unlock()
	go f.copy(up, c)
	f.copy(c, up)
}

func (f *freezer) copy(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.mu.Lock()
		frozen := f.frozen
		f.mu.Unlock()
		if n > 0 && !frozen {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze stops forwarding on every connection; unfreezing cuts the
// connections that were frozen (what they lost leaves them useless).
func (f *freezer) freeze(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = on
	if !on {
		for _, c := range f.conns {
			c.Close()
		}
		f.conns = nil
	}
}

// A pub/sub connection that hung comes back when the network does: its
// listeners are closed (messages may have been lost meanwhile), never
// left silent on a connection go-redis replaced, and a new Listen gets
// messages. (While the network stays hung the listener is silent: go-redis
// learns of a dead pub/sub connection only from a failed write.)
func TestNotifyAfterHang(t *testing.T) {
	one := newStore(t)
	f, u := startFreezer(t)
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
	f.freeze(true)
	if err := one.Notify(t.Context(), key, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // past go-redis's pub/sub health check (3s)
	f.freeze(false)
	storetest.AfterDrop(t, one, two, key, ch, 15*time.Second)
}
