package server_test

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/transcript"
)

func health(t *testing.T, r resp) server.Health {
	t.Helper()
	var h server.Health
	r.json(t, &h)
	return h
}

// The health routes need no key, pass the Host check of a keyless server
// (a kubelet names the server by its address) and name no version unless
// told to.
func TestHealthRoutes(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.get("/healthz", "Host", "10.1.2.3:8080")
	if h := health(t, r); r.status != 200 || h.Status != "ok" || h.Version != "" || h.Checks != nil {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
	r = e.get("/readyz", "Host", "10.1.2.3:8080")
	h := health(t, r)
	if r.status != 200 || h.Status != "ready" || h.Version != "" || len(h.Failed) != 0 ||
		h.Checks["store"] != "ok" || h.Checks["channels"] != "ok" || h.Checks["shutdown"] != "ok" {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	if r := e.post("/healthz", map[string]any{}); r.status != 405 {
		t.Fatalf("POST /healthz: %d", r.status)
	}
	// The Host check still holds for everything else.
	if r := e.get("/v1/sessions", "Host", "10.1.2.3:8080"); r.status != 403 {
		t.Fatalf("foreign Host on the API: %d", r.status)
	}

	keyed := newEnv(t, spool.Config{}, server.Options{Keys: mustKeys(t), Version: "v1.2.3"})
	for _, path := range []string{"/healthz", "/readyz"} {
		r := keyed.get(path)
		if r.status != 200 || health(t, r).Version != "v1.2.3" {
			t.Fatalf("%s without a key: %d %s", path, r.status, r.body)
		}
	}
	if r := keyed.get("/v1/sessions"); r.status != 401 {
		t.Fatalf("the API without a key: %d", r.status)
	}
}

func mustKeys(t *testing.T) *server.APIKeys {
	k, err := server.NewAPIKeys(server.APIKey{Name: "p", Key: "project-key-0123456789", Project: true})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Drain makes /readyz 503 and leaves the API alone; Shutdown refuses new
// requests but not the probes; Close closes the channels.
func TestReadyzDrainAndClose(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	e.srv.Drain()
	r := e.get("/readyz")
	if h := health(t, r); r.status != 503 || h.Status != "unavailable" || !slices.Equal(h.Failed, []string{"shutdown"}) || h.Checks["shutdown"] != "draining" {
		t.Fatalf("readyz while draining: %d %s", r.status, r.body)
	}
	if r := e.post("/invoke", map[string]any{"prompt": "hi"}); r.status != 200 {
		t.Fatalf("invoke while draining: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.post("/invoke", map[string]any{"prompt": "hi"})
	if r.status != 503 || r.errCode(t) != server.CodeUnavailable || r.retryAfter(t) != 1 || !r.apiErr(t).Stopping {
		t.Fatalf("invoke after Shutdown: %d %s", r.status, r.body)
	}
	if r := e.get("/healthz"); r.status != 200 {
		t.Fatalf("healthz after Shutdown: %d", r.status)
	}
	r = e.get("/readyz")
	if h := health(t, r); r.status != 503 || !slices.Equal(h.Failed, []string{"shutdown", "channels"}) || h.Checks["channels"] != "closed" {
		t.Fatalf("readyz after Shutdown: %d %s", r.status, r.body)
	}
}

// A follower (events?follow=1) has no end of its own: Shutdown does not
// wait for it, which held every restart for its whole grace period, but
// it still gets the end of the turn running when shutdown began, and
// then its stream ends.
func TestShutdownEndsFollowers(t *testing.T) {
	slow := &gate{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEnv(t, spool.Config{Model: slow}, server.Options{})
	answered := make(chan resp, 1)
	go func() { answered <- e.post("/invoke", map[string]any{"prompt": "hi", "sessionId": "live"}) }()
	<-slow.entered
	ls := e.open("GET", "/v1/sessions/live/events?follow=1", nil)
	if ls.res.StatusCode != 200 {
		t.Fatalf("follow: %d", ls.res.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- e.srv.Shutdown(ctx) }()
	close(slow.release)
	if r := <-answered; r.status != 200 {
		t.Fatalf("the running turn: %d %s", r.status, r.body)
	}
	ls.until("turn_end")
	if err := <-shut; err != nil || ctx.Err() != nil {
		t.Fatalf("Shutdown = %v, its context %v: it waited for the follower", err, ctx.Err())
	}
	if ev, ok := ls.next(); ok {
		t.Fatalf("the follower's stream went on after Shutdown: %v", ev)
	}
}

// Shutdown waits for the requests being served: a turn running when it
// is called finishes, and Shutdown returns after it.
func TestShutdownWaitsForRequests(t *testing.T) {
	slow := &gate{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	e := newEnv(t, spool.Config{Model: slow}, server.Options{})
	answered := make(chan resp, 1)
	go func() { answered <- e.post("/invoke", map[string]any{"prompt": "hi"}) }()
	<-slow.entered
	shut := make(chan error, 1)
	go func() { shut <- e.srv.Shutdown(context.Background()) }()
	// The turn still runs: Shutdown has not returned, probes say so.
	deadline := time.Now().Add(5 * time.Second)
	for e.get("/readyz").status != 503 {
		if time.Now().After(deadline) {
			t.Fatal("readyz never 503 during Shutdown")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with a turn running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(slow.release)
	if r := <-answered; r.status != 200 {
		t.Fatalf("the running turn: %d %s", r.status, r.body)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return once the turn finished")
	}
}

// tcpProxy stands between a store and its server, so that a test can make
// the server unreachable (close), hung (hang) or back (open) without
// touching the server, which other tests share.
type tcpProxy struct {
	t      *testing.T
	addr   string // where clients connect
	target string

	mu    sync.Mutex
	ln    net.Listener
	hung  bool
	conns []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			hung := p.hung
			p.mu.Unlock()
			if hung {
				continue // held open, never answered
			}
			go p.relay(c)
		}
	}()
}

func (p *tcpProxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

// close stops listening and cuts every connection: the store's server is
// unreachable.
func (p *tcpProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns, p.hung = nil, false
}

// hang cuts every connection and takes new ones without ever answering.
func (p *tcpProxy) hang() {
	p.close()
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
	p.listen()
}

// open listens again, on the same address, and relays.
func (p *tcpProxy) open() {
	p.close()
	p.listen()
}

func (p *tcpProxy) listen() {
	var ln net.Listener
	var err error
	for range 50 { // the port was just closed; it is ours again at once on Linux
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// waitReady polls /readyz until it answers want, and returns its body.
func waitReady(t *testing.T, e *env, want int) server.Health {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		start := time.Now()
		r := e.get("/readyz")
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("readyz took %v: the store check is not bounded", took)
		}
		if r.status == want {
			return health(t, r)
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz is %d %s, not %d, after 15s", r.status, r.body, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Readiness follows the store: a Postgres or Redis that cannot be reached,
// or that does not answer, makes /readyz 503 naming the store (and only
// that, never its URL) within the bound; back, and /readyz is 200 again.
func TestReadyzFollowsTheStore(t *testing.T) {
	open := map[string]func(t *testing.T) (string, func(ctx context.Context, rawURL string) (store.Store, error)){
		"postgres": func(t *testing.T) (string, func(context.Context, string) (store.Store, error)) {
			return teststores.PostgresURL(t), func(ctx context.Context, u string) (store.Store, error) { return pgstore.Open(ctx, u) }
		},
		"redis": func(t *testing.T) (string, func(context.Context, string) (store.Store, error)) {
			return teststores.RedisURL(t), func(ctx context.Context, u string) (store.Store, error) { return redisstore.Open(ctx, u) }
		},
	}
	for _, name := range []string{"postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, openStore := open[name](t)
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			proxy := newTCPProxy(t, u.Host)
			u.Host = proxy.addr
			st, err := openStore(context.Background(), u.String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close(st) })
			e := newEnv(t, spool.Config{Store: st}, server.Options{ReadyTimeout: 200 * time.Millisecond})
			if h := waitReady(t, e, 200); h.Checks["store"] != "ok" {
				t.Fatalf("ready: %+v", h)
			}

			proxy.close()
			h := waitReady(t, e, 503)
			if !slices.Equal(h.Failed, []string{"store"}) || h.Checks["store"] == "ok" {
				t.Fatalf("store unreachable: %+v", h)
			}
			body, _ := json.Marshal(h)
			for _, leak := range []string{proxy.addr, u.Hostname(), name + ":"} {
				if leak != "" && strings.Contains(string(body), leak) {
					t.Fatalf("readyz names %q: %s", leak, body)
				}
			}

			proxy.open()
			waitReady(t, e, 200)

			// A server that takes connections and never answers: the
			// check ends at ReadyTimeout.
			proxy.hang()
			if h := waitReady(t, e, 503); !slices.Equal(h.Failed, []string{"store"}) {
				t.Fatalf("store hung: %+v", h)
			}
			proxy.open()
			waitReady(t, e, 200)
		})
	}
}

// gate is a model whose answer waits until release is closed; entered
// gets a value as each request starts.
type gate struct {
	release chan struct{}
	entered chan struct{}
}

func (g *gate) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		if yield(model.Event{Kind: model.EventText, Text: "done"}, nil) {
			yield(model.Event{Kind: model.EventUsage, Usage: transcript.Usage{InputTokens: 1, OutputTokens: 1}}, nil)
		}
	}
}
