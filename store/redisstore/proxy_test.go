package redisstore_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy is a TCP proxy in front of Redis that loses the replies to, or
// never delivers, the scripts it is told about, as a broken network does.
// It relies on go-redis sending one command per connection at a time
// (no pipelining), which holds for the script calls under test.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	rules   map[string]proxyRule // by script SHA1
	held    [][]any              // commands never delivered, as Do arguments
	dropped int                  // replies lost
	onDrop  func()               // run once, after a script ran and before its reply is lost
	frozen  bool                 // nothing is forwarded, either way (freeze)
	conns   []net.Conn
}

// freeze stops forwarding on every connection, which stay open, as a
// network that drops packets without a reset; unfreezing cuts the
// connections that were frozen (what they lost leaves them useless).
func (p *proxy) freeze(on bool) {
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

func (p *proxy) isFrozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

type proxyRule int

const (
	relay     proxyRule = iota
	dropReply           // deliver the command, lose the reply, close the client's connection
	hold                // keep the command (and those pipelined with it), close the client's connection
)

// startProxy listens on a free port in front of the Redis of
// SPOOL_TEST_REDIS and returns the proxy and a URL for it.
func startProxy(t *testing.T) (*proxy, string) {
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
	p := &proxy{ln: ln, target: u.Host, rules: map[string]proxyRule{}}
	u.Host = ln.Addr().String()
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	return p, u.String()
}

func (p *proxy) set(sha string, r proxyRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules[sha] = r
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	var dropping atomic.Bool
	go func() { // server to client
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && dropping.Load() {
				// The reply of the script: the server ran it. Lose it.
				p.mu.Lock()
				p.dropped++
				f := p.onDrop
				p.onDrop = nil
				p.mu.Unlock()
				if f != nil {
					f()
				}
				client.Close()
				server.Close()
				return
			}
			if n > 0 && !p.isFrozen() {
				if _, err := client.Write(buf[:n]); err != nil {
					server.Close()
					return
				}
			}
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	r := bufio.NewReader(client)
	for {
		raw, args, err := readCommand(r)
		if err != nil {
			client.Close()
			server.Close()
			return
		}
		rule := relay
		if len(args) > 1 && strings.EqualFold(args[0].(string), "EVALSHA") {
			p.mu.Lock()
			rule = p.rules[args[1].(string)]
			p.mu.Unlock()
		}
		switch rule {
		case hold:
			p.mu.Lock()
			p.held = append(p.held, args)
			for r.Buffered() > 0 { // the rest of a pipeline, sent with it
				_, more, err := readCommand(r)
				if err != nil {
					break
				}
				p.held = append(p.held, more)
			}
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		case dropReply:
			dropping.Store(true)
		}
		if p.isFrozen() {
			continue
		}
		if _, err := server.Write(raw); err != nil {
			client.Close()
			return
		}
	}
}

// readCommand reads one RESP command, an array of bulk strings, and
// returns its bytes and its arguments.
func readCommand(r *bufio.Reader) ([]byte, []any, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "*")))
	if !strings.HasPrefix(head, "*") || err != nil {
		return nil, nil, fmt.Errorf("not a RESP array: %q", head)
	}
	raw := []byte(head)
	args := make([]any, n)
	for i := range n {
		l, err := r.ReadString('\n')
		if err != nil {
			return nil, nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(l, "$")))
		if !strings.HasPrefix(l, "$") || err != nil {
			return nil, nil, fmt.Errorf("not a bulk string: %q", l)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, nil, err
		}
		raw = append(append(raw, l...), b...)
		args[i] = string(b[:size])
	}
	return raw, args, nil
}
