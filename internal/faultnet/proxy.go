// Package faultnet is test support: a TCP proxy between a client and a
// server (a database) that a test can cut, hang, or have lose one reply,
// as a failing network does, without touching the server other tests
// share. No code of the module imports it.
package faultnet

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy relays the connections made to it to its target.
type Proxy struct {
	target string

	mu     sync.Mutex
	ln     net.Listener
	frozen bool              // nothing is forwarded, in either direction, on any connection
	hung   map[net.Conn]bool // connections that forward nothing, for ever (Hang)
	cutOn  []byte            // a reply holding these bytes is not passed on; its connection is cut
	cut    chan struct{}
	conns  []net.Conn
}

// New starts a proxy to the host of rawURL and returns it and rawURL with
// its host replaced by the proxy's. The proxy stops with the test.
func New(t testing.TB, rawURL string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: u.Host, ln: ln}
	u.Host = ln.Addr().String()
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p, u.String()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

func (p *Proxy) relay(c net.Conn) {
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
func (p *Proxy) copy(dst, src net.Conn, reply bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			frozen := p.frozen || p.hung[src]
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
			return
		}
	}
}

// Cut closes every connection the proxy relays, as a server restart or a
// network failure does; new connections are relayed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns, p.hung = nil, nil
}

// Freeze stops forwarding on every connection, leaving them open, as a
// network that drops packets without a reset. The network coming back
// (on false) cuts the connections that were frozen: what they lost
// meanwhile leaves them useless.
func (p *Proxy) Freeze(on bool) {
	p.mu.Lock()
	p.frozen = on
	p.mu.Unlock()
	if !on {
		p.Cut()
	}
}

// Hang makes the connections open now forward nothing, in either
// direction, for good, and leaves them open, while new connections are
// relayed: as a network path that lost its state (a NAT or a firewall
// that forgot them, a failover that moved the server's address) drops
// the packets of the connections it had, without a reset, and carries
// new ones.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung == nil {
		p.hung = map[net.Conn]bool{}
	}
	for _, c := range p.conns {
		p.hung[c] = true
	}
}

// CutReply makes the next reply holding b never reach the client: its
// connection is cut instead. The returned channel is closed when it was.
func (p *Proxy) CutReply(b string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOn, p.cut = []byte(b), make(chan struct{})
	return p.cut
}
