package pgstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storetest"
	"github.com/spool-go/spool/transcript"
)

// faultProxy stands between a store and Postgres so that a test can hang
// the connections it relays (keep them open and forward nothing, as a
// network that drops packets does) or cut one right after the server
// answered a statement, without touching the server other tests share.
type faultProxy struct {
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener
	frozen bool   // nothing is forwarded, in either direction, on any connection
	cutOn  []byte // a reply holding these bytes is not passed on; its connection is cut
	cut    chan struct{}
	conns  []net.Conn
}

// newFaultProxy starts a proxy to the server of u and returns it and u
// with its host replaced by the proxy's.
func newFaultProxy(t testing.TB, u string) (*faultProxy, string) {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{target: pu.Host, addr: ln.Addr().String(), ln: ln}
	pu.Host = p.addr
	go p.accept()
	t.Cleanup(p.close)
	return p, pu.String()
}

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

func (p *faultProxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go p.copy(up, c, false)
	p.copy(c, up, true)
}

// copy forwards src to dst until either closes; reply is the direction
// from the server.
func (p *faultProxy) copy(dst, src net.Conn, reply bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			frozen := p.frozen
			cut := reply && p.cutOn != nil && bytes.Contains(buf[:n], p.cutOn)
			var done chan struct{}
			if cut {
				p.cutOn, done = nil, p.cut
			}
			p.mu.Unlock()
			if cut {
				close(done)
				return
			}
			if !frozen {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

// freeze stops forwarding on every connection, leaving them open. The
// network coming back (on false) cuts the connections that were frozen:
// what they lost meanwhile leaves them useless, as a real network's
// dropped packets would not.
func (p *faultProxy) freeze(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = on
	if !on {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// cutReply makes the next reply holding b never reach the client: the
// connection is cut instead. The returned channel is closed when it was.
func (p *faultProxy) cutReply(b string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOn, p.cut = []byte(b), make(chan struct{})
	return p.cut
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

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
	p, u := newFaultProxy(t, testURL(t))
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
	p.freeze(true)
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("a message through a hung connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener of a hung connection was neither closed nor given messages: a watcher would wait in silence for ever")
	}
	p.freeze(false)
	storetest.AfterDrop(t, one, two, key, ch, 10*time.Second)
}

// The server committed an append and the connection was cut before its
// reply came back. Append must not report a plain failure (the entry is
// in the session): it finds out, and says so; a retry of the same entry
// does not store it twice.
func TestAppendReplyLost(t *testing.T) {
	schema := newSchema(t)
	direct := openIn(t, schema)
	p, u := newFaultProxy(t, testURL(t))
	via, err := Open(t.Context(), u, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { via.Close() })
	key := store.Key{Agent: "a", ID: "lost"}
	c := newChain(t, via, key, time.Now())
	first := c.user("one")
	e := c.entry(transcript.TypeAssistantMessage, transcript.AssistantMessage{Text: "two"})
	cut := p.cutReply("INSERT 0 1")
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
