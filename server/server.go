package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
)

// Options configure a Server. The zero Options are a server without
// authentication, for loopback use.
type Options struct {
	// Keys authenticate requests (bearer keys, see LoadAPIKeys). Nil or empty:
	// no authentication; every request has project access. Only expose
	// such a server on loopback: spool serve refuses anything else.
	Keys *APIKeys
	// MaxBodyBytes caps request bodies; larger ones are refused with 413.
	// Default 1 MiB.
	MaxBodyBytes int64
	// ReadTimeout bounds the time to read a request's body, counted from
	// when its handler starts (the headers are bounded by the
	// http.Server's ReadHeaderTimeout): a body still arriving then is cut
	// and the request answered 408 request_timeout, so that a client
	// sending a byte now and then cannot hold a connection. It is a
	// deadline per request, set with http.ResponseController and lifted
	// once the body is read, not http.Server.ReadTimeout: an event stream
	// that lasts longer is not cut by it. Default 30 seconds
	// (DefaultReadTimeout); negative for none.
	ReadTimeout time.Duration
	// KeepAlive is the interval of the comment lines (": ping") that keep
	// an idle event stream open through proxies. Default 15 seconds.
	KeepAlive time.Duration
	// Logger receives one line per request and the errors clients are not
	// told, each with the request id; never content. Default
	// slog.Default().
	Logger *slog.Logger
	// AllowedHosts are Host header values (host or host:port) accepted
	// besides loopback names (localhost, 127.0.0.1, [::1]) by /mcp, and by
	// every route when the server has no keys: a foreign Host means DNS
	// rebinding. Add the name the server is reached by.
	AllowedHosts []string
	// AllowedOrigins are Origin values ("https://app.example.com") that
	// /mcp accepts besides the server's own origin, and, when the server
	// has no keys, every route that changes something (the rest refuse
	// another site's pages: see the package doc).
	AllowedOrigins []string
	// UI, when set, serves / and every other path outside the API
	// (/invoke, /chat, /api/chat, /mcp, /v1/…): the hook for the web UI, a
	// separate package. Its paths are served without a key, since a
	// browser cannot send one for a page load; the API calls the UI makes
	// need one like any other client's. (The Host check of a keyless
	// server applies to it too.)
	UI http.Handler
	// OnAccept, when set, is called as a /chat request takes its place in
	// its session's queue, in that order, with the request's id
	// (X-Request-Id). Requests of one session are answered in exactly the
	// order of these calls. For tests and metrics; it must return quickly.
	OnAccept func(requestID, sessionID string)
	// Channels are more channel drivers to connect to the agent, such as
	// the chat platforms of server/channel/slack, telegram and discord.
	// A driver that is an http.Handler is mounted at /channels/<Name>/:
	// those routes are the platform's webhooks, which authenticate the
	// platform's own way (a signature, a secret token) instead of with
	// Keys, and are not held to the Host check of a keyless server (a
	// platform reaches the server through a public name, and a forged
	// request fails the platform's check). Close closes them.
	Channels []channel.Driver
	// ReadyTimeout bounds the store check of GET /readyz: a store that
	// has not answered by then makes the server not ready. Default 2
	// seconds (DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Version, when set, is reported by GET /healthz and GET /readyz;
	// by default those public routes name no version (spool serve
	// --expose-version sets it).
	Version string
	// Metrics, when set, is served at GET /metrics, behind the keys like
	// the API (spool serve --metrics gives the Prometheus exporter of
	// package telemetry; --metrics-addr serves it on a listener of its
	// own instead).
	Metrics http.Handler
	// TracerProvider and MeterProvider, when either is set, instrument
	// every request with otelhttp (a server span following the HTTP
	// semantic conventions, named by the route, continuing the client's
	// W3C traceparent (and what the global propagator reads), parent of
	// the turn's spans; http.server.request.duration by route and status) and
	// record the server's own metrics (spool.server.active_streams,
	// spool.channel.queue.depth). Nil is none: unlike otelhttp's
	// default, the global providers are not used unless given.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// OnDisconnect says what a turn started over HTTP (/chat, /api/chat,
	// the /v1 routes that run turns) does when its client goes away:
	// DisconnectContinue (the default) runs it to its end, for the
	// client or any other to follow again (GET /v1/sessions/{id}/events,
	// GET /api/chat/{id}/stream) or to stop (POST
	// /v1/sessions/{id}/stop); DisconnectCancel stops it, recorded
	// cancelled. A turn over /mcp follows it too when its client closes
	// the call's request under the MCP protocol 2026-07-28 or later
	// (before it, closing the request is no cancel, and the turn runs
	// on); a client's notifications/cancelled for the call (any protocol
	// version) stops the turn whatever this says, as POST
	// /v1/sessions/{id}/stop does.
	OnDisconnect Disconnect
	// TurnTimeout bounds a turn that runs on after its client went away,
	// so that an abandoned turn cannot hold a model call forever; it is
	// then recorded cancelled. Default 10 minutes (DefaultTurnTimeout).
	TurnTimeout time.Duration
	// MaxQueue bounds the /chat requests waiting on one session, the one
	// being answered included: over it a request is answered 429
	// queue_full with Retry-After. Default 16 (DefaultMaxQueue);
	// negative for no bound.
	MaxQueue int
}

// Disconnect is what a turn does when its HTTP client goes away
// (Options.OnDisconnect).
type Disconnect string

// Disconnect policies.
const (
	DisconnectContinue Disconnect = "continue" // the turn runs to its end (the default)
	DisconnectCancel   Disconnect = "cancel"   // the turn stops, recorded cancelled
)

// DefaultTurnTimeout is the default of Options.TurnTimeout.
const DefaultTurnTimeout = 10 * time.Minute

// DefaultMaxQueue is the default of Options.MaxQueue.
const DefaultMaxQueue = 16

// DefaultMaxBodyBytes is the default cap on request bodies.
const DefaultMaxBodyBytes = 1 << 20

// DefaultReadTimeout is the default of Options.ReadTimeout.
const DefaultReadTimeout = 30 * time.Second

// Server is the HTTP face of one agent: an http.Handler with no listener of
// its own, to be mounted in any mux (see the package example). Its routes
// are described in the package documentation.
type Server struct {
	agent      *spool.Agent
	opts       Options
	userScoped bool
	mux        *http.ServeMux
	handler    http.Handler
	chat       *HTTPChannel
	dispatch   *channel.AgentDispatcher
	log        *slog.Logger
	channels   []connected

	patterns []string         // the routes, for Routes
	tel      *serverTelemetry // nil without providers
	ready    readiness
	inflight inflight
	draining atomic.Bool // /readyz answers 503 (Drain)
	refusing atomic.Bool // new requests are answered 503 (Shutdown)
	closed   atomic.Bool // Close was called
	// base ends the turns that outlive their requests, at Close; turns
	// counts them.
	base     context.Context
	endTurns context.CancelFunc
	// following ends the event streams that follow a session's next
	// turns (?follow=1), at Close: they have no end of their own, so
	// Shutdown does not wait for them, and they end once the turns have.
	following     context.Context
	stopFollowing context.CancelFunc
	turns         sync.WaitGroup
	mcpCalls      mcpCalls // the running calls of /mcp, for notifications/cancelled
}

// connected is a driver of Options.Channels and its dispatcher.
type connected struct {
	driver   channel.Driver
	dispatch *channel.AgentDispatcher
	prefix   string // its webhook's routes; "" when it has none
}

// New returns the server of agent.
func New(agent *spool.Agent, opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.OnDisconnect == "" {
		opts.OnDisconnect = DisconnectContinue
	}
	if opts.TurnTimeout <= 0 {
		opts.TurnTimeout = DefaultTurnTimeout
	}
	if opts.MaxQueue == 0 {
		opts.MaxQueue = DefaultMaxQueue
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if _, ok := opts.Logger.Handler().(requestIDHandler); !ok {
		opts.Logger = slog.New(LogHandler(opts.Logger.Handler()))
	}
	s := &Server{
		agent:      agent,
		opts:       opts,
		userScoped: agent.Scope() == spool.ScopeUser,
		mux:        http.NewServeMux(),
		log:        opts.Logger,
	}
	s.inflight.idle = make(chan struct{}, 1)
	s.base, s.endTurns = context.WithCancel(context.Background())
	s.following, s.stopFollowing = context.WithCancel(context.Background())
	s.chat = newHTTPChannel(s)
	// Listen only records the dispatcher; it cannot fail.
	s.dispatch, _ = channel.Connect(context.Background(), agent, s.chat)
	for _, d := range opts.Channels {
		c := connected{driver: d, dispatch: channel.NewDispatcher(agent, d)}
		if err := d.Listen(context.Background(), c.dispatch); err != nil {
			s.log.Error("channel did not start", "channel", d.Name(), "error", err)
			continue
		}
		if _, ok := d.(http.Handler); ok {
			c.prefix = "/channels/" + d.Name() + "/"
		}
		s.channels = append(s.channels, c)
	}
	tel, err := newTelemetry(s)
	if err != nil {
		// Only a broken MeterProvider fails to make instruments.
		s.log.Error("server telemetry is off", "error", err)
	}
	s.tel = tel
	s.routes()
	s.handler = s.middleware(s.mux)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Channel returns the HTTP channel behind POST /chat.
func (s *Server) Channel() *HTTPChannel { return s.chat }

// Close closes the HTTP channel: /chat requests still waiting are
// answered 503 (or an SSE error event) and new ones refused; the turn
// running for each stops at its next event. Close returns once every
// /chat turn is recorded, so a program can close its store after it.
// Streams that follow a session (events?follow=1) end then, and later
// ones at once. Other routes keep working.
func (s *Server) Close() error {
	s.closed.Store(true)
	err := s.chat.Close()
	s.endTurns()
	s.turns.Wait()
	for _, c := range s.channels {
		if cerr := c.driver.Close(); err == nil {
			err = cerr
		}
	}
	s.dispatch.Wait()
	for _, c := range s.channels {
		c.dispatch.Wait()
	}
	s.stopFollowing() // every turn has ended: its followers have had it
	s.tel.close()
	return err
}

// Shutdown closes the server gracefully. /readyz answers 503 (see Drain)
// and new requests are refused with 503 unavailable (Connection: close),
// the health routes and the channels' webhooks excepted; the drivers of
// Options.Channels stop taking messages at once (a driver with a Drain
// method, as the chat platforms have) and answer their webhooks their
// platform's way: 503 for Slack and Telegram, which deliver again later,
// and for Discord, which never does, a note to the person to ask again.
// The requests being served and the turns the channels run get until ctx
// ends to finish, and then Close stops what still runs. An event stream
// that follows a session's next turns (events?follow=1) is not waited
// for: it has no end of its own, so it would hold every shutdown for the
// whole of ctx; it ends in Close, once the turns it could show have
// ended. A chat
// platform's turn belongs to no HTTP request, so an http.Server's own
// Shutdown does not wait for it; call Shutdown first, then the
// http.Server's, which closes the listener once nothing is left to
// answer.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	s.refusing.Store(true)
	for _, c := range s.channels {
		if d, ok := c.driver.(interface{ Drain() }); ok {
			d.Drain()
		}
	}
	done, detached := make(chan struct{}), make(chan struct{})
	go func() {
		for _, c := range s.channels {
			c.dispatch.Wait()
		}
		close(done)
	}()
	go func() {
		s.turns.Wait()
		close(detached)
	}()
	if s.inflight.until(ctx) == nil {
		for _, ch := range []chan struct{}{done, detached} {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
	}
	return s.Close()
}

// routes registers every route, and for each path a catch-all that
// answers other methods 405 with Allow.
func (s *Server) routes() {
	allow := map[string][]string{}
	handle := func(method, path string, h http.HandlerFunc) {
		s.mux.HandleFunc(method+" "+path, h)
		s.patterns = append(s.patterns, method+" "+path)
		if method == http.MethodGet {
			allow[path] = append(allow[path], http.MethodGet, http.MethodHead)
		} else {
			allow[path] = append(allow[path], method)
		}
	}
	handle("POST", "/invoke", s.handleInvoke)
	handle("POST", "/chat", s.chat.ServeHTTP)
	handle("GET", "/v1/sessions", s.handleList)
	handle("GET", "/v1/sessions/{id}", s.handleInfo)
	handle("DELETE", "/v1/sessions/{id}", s.handleDelete)
	handle("PATCH", "/v1/sessions/{id}", s.handleRename)
	handle("GET", "/v1/search", s.handleSearch)
	handle("GET", "/v1/sessions/{id}/messages", s.handleMessages)
	handle("GET", "/v1/sessions/{id}/history", s.handleHistory)
	handle("GET", "/v1/sessions/{id}/approvals", s.handleApprovals)
	handle("POST", "/v1/sessions/{id}/approvals/{approvalId}", s.handleDecide)
	handle("POST", "/v1/sessions/{id}/regenerate", s.handleRegenerate)
	handle("POST", "/v1/sessions/{id}/turns/{turnId}/edit", s.handleEdit)
	handle("POST", "/v1/sessions/{id}/turns/{turnId}/switch", s.handleSwitch)
	handle("POST", "/v1/sessions/{id}/fork", s.handleFork)
	handle("POST", "/v1/sessions/{id}/stop", s.handleStop)
	handle("GET", "/v1/sessions/{id}/events", s.handleEvents)
	handle("POST", "/v1/sessions/{id}/compact", s.handleCompact)
	handle("POST", "/api/chat", s.handleAIChat)
	handle("GET", "/api/chat/{id}", s.handleAIChatLoad)
	handle("GET", "/api/chat/{id}/stream", s.handleAIStream)
	// Stateless MCP: every request is a POST; there is no session to
	// resume (GET) or end (DELETE).
	handle("POST", "/mcp", s.mcpHandler().ServeHTTP)
	handle("GET", "/healthz", s.handleHealthz)
	handle("GET", "/readyz", s.handleReadyz)
	handle("GET", "/v1/openapi.json", s.handleOpenAPI)
	if s.opts.Metrics != nil {
		handle("GET", "/metrics", s.opts.Metrics.ServeHTTP)
	}
	for _, c := range s.channels {
		if c.prefix == "" {
			continue
		}
		// A driver that lists its routes has each registered, so that
		// logs, metrics and the API description name the route; the
		// prefix takes the rest (the driver's own 404 and 405).
		h := c.driver.(http.Handler)
		if rt, ok := c.driver.(interface{ Routes() []string }); ok {
			for _, pattern := range rt.Routes() {
				s.mux.Handle(pattern, h)
				s.patterns = append(s.patterns, pattern)
			}
		}
		s.mux.Handle(c.prefix, h)
	}
	for path, methods := range allow {
		list := strings.Join(slices.Compact(methods), ", ")
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", list)
			writeAPIError(w, errf(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use "+list), errorBody{})
		})
	}
	if s.opts.UI != nil {
		s.mux.Handle("/", s.opts.UI)
		s.patterns = append(s.patterns, "GET /")
		return
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, errf(http.StatusNotFound, CodeNotFound, "no such route"), errorBody{})
	})
}

// middleware wraps every request: the HTTP server span and metrics
// (otelhttp, when Options has providers), the count of requests in flight,
// a request id, a logger carrying it, panic recovery, the access log line,
// the refusal of new requests once Shutdown began, the Host check of
// keyless servers, authentication, the user of user-scoped agents, and the
// body cap.
func (s *Server) middleware(next http.Handler) http.Handler {
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, next) }))
	if s.tel != nil {
		h = s.tel.wrap(h)
	}
	return h
}

// serve is the middleware's work for one request (see middleware).
func (s *Server) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	s.inflight.start()
	defer s.inflight.done()
	start := time.Now()
	rid := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", rid)
	// s.log's handler adds the request id of the context to every
	// record. The request id and, once authenticated, the identity are
	// one context value, made once: the handler is given the request
	// only once both are known.
	log := s.log
	rctx := &requestContext{Context: r.Context(), id: rid}
	ctx := context.Context(rctx)
	rw := &statusWriter{ResponseWriter: w}
	var ident Identity
	var served *http.Request // what next was given: the mux sets its Pattern
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.ErrorContext(ctx, "handler panicked", "panic", panicText(p), "stack", string(debug.Stack()))
			if !rw.wrote {
				writeAPIError(rw, errf(http.StatusInternalServerError, CodeInternal, "internal error"), errorBody{})
			}
		}
		route := s.routeOf(r, served)
		// The pattern for otelhttp, which names the server span and
		// labels its metrics by it; the span's http.route is ours to
		// set, the route being known only now.
		r.Pattern = route.pattern
		if s.tel != nil {
			s.tel.routed(ctx, route.path)
		}
		if rw.stream != nil {
			rw.stream()
		}
		s.accessLog(ctx, r, rw, route.path, ident, time.Since(start))
		if s.tel != nil {
			// otelhttp labels its metrics with the request's Host
			// (server.address, server.port), which is the client's
			// text: one series per name it sends, kept for good. The
			// request is otelhttp's copy, done with once this returns.
			r.Host = ""
		}
	}()
	if s.tel != nil {
		rw.onStream = func() { rw.stream = s.tel.streamOpened(ctx, s.routeOf(r, served).path) }
	}
	// serve hands the request to next, its body capped (MaxBodyBytes,
	// ReadTimeout) when capped.
	serve := func(capped bool) {
		served = r.WithContext(ctx)
		if capped {
			// The underlying writer, so that an oversized body also
			// closes the connection.
			served.Body = http.MaxBytesReader(w, served.Body, s.opts.MaxBodyBytes)
			served.Body = bodyDeadline(w, served, s.opts.ReadTimeout)
		}
		next.ServeHTTP(rw, served)
	}
	if isProbe(r.URL.Path) {
		// Public, during shutdown too, and never held to the Host
		// check: a load balancer or the kubelet names the server by its
		// address.
		serve(false)
		return
	}
	if s.refusing.Load() && !s.isWebhook(r.URL.Path) {
		rw.Header().Set("Connection", "close")
		writeAPIError(rw, shuttingDownError(), errorBody{})
		return
	}
	if s.isWebhook(r.URL.Path) {
		// The platform's own authentication, in the driver, comes
		// before anything is touched.
		serve(true)
		return
	}
	if s.opts.Keys.Len() == 0 && !s.hostAllowed(r.Host) {
		writeAPIError(rw, errf(http.StatusForbidden, CodeForbidden, "this server answers to loopback names only (Host "+r.Host+" is not allowed)"), errorBody{})
		return
	}
	if s.opts.Keys.Len() == 0 && !safeMethod(r.Method) && s.isAPIPath(r.URL.Path) && !s.sameSite(r) {
		// Without keys the browser's own checks are all that keeps
		// another site's page from acting here: a form or a no-cors
		// fetch may POST with no body and no preflight, and its Host is
		// this server's.
		writeAPIError(rw, errf(http.StatusForbidden, CodeForbidden, "cross-site request refused (Origin "+r.Header.Get("Origin")+"): a server without keys acts only for its own pages and the allowed origins"), errorBody{})
		return
	}
	if s.opts.UI != nil && !s.isAPIPath(r.URL.Path) {
		// The UI authenticates through the API it calls; its own
		// pages are public.
		serve(false)
		return
	}
	id, aerr := s.authenticate(r.Header)
	if aerr != nil {
		writeAPIError(rw, aerr, errorBody{})
		return
	}
	ident = id
	rctx.ident, rctx.authenticated = id, true
	serve(true)
}

// panicText is what the log says of a panic's value: a runtime error's
// message, which names no data, or else only the value's type, since the
// code that panicked may have put anything there (the prompt it was
// given, a tool's arguments). The stack logged with it says where.
func panicText(p any) string {
	if re, ok := p.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("a value of type %T", p)
}

// safeMethod reports whether a request with method m changes nothing.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameSite reports whether a request comes from this server's own pages,
// an allowed origin, or no browser page at all. A browser says where the
// page is (Sec-Fetch-Site): same-origin holds behind a reverse proxy that
// rewrites Host too, where Origin and Host differ; from another site, the
// page's Origin must be allowed (originAllowed). Without Sec-Fetch-Site
// (an older browser, or a program), the Origin decides, and a request
// without one passes.
func (s *Server) sameSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
		return s.originAllowed(r)
	}
	return r.Header.Get("Origin") != "" && s.originAllowed(r)
}

// isAPIPath reports whether path belongs to a route of the server rather
// than the UI.
func (s *Server) isAPIPath(path string) bool {
	switch {
	case path == "/invoke", path == "/chat", path == "/api/chat", strings.HasPrefix(path, "/api/chat/"), path == "/mcp", path == "/metrics",
		path == "/v1", strings.HasPrefix(path, "/v1/"):
		return true
	}
	return s.isWebhook(path)
}

// isWebhook reports whether path belongs to a mounted channel's webhook.
func (s *Server) isWebhook(path string) bool {
	for _, c := range s.channels {
		if c.prefix != "" && strings.HasPrefix(path, c.prefix) {
			return true
		}
	}
	return false
}

// withUser resolves the user the request acts as and returns a context
// for the agent carrying it.
func (s *Server) withUser(r *http.Request) (context.Context, string, *apiError) {
	id, _ := IdentityFromContext(r.Context())
	user, aerr := s.actor(id, r.Header)
	if aerr != nil {
		return nil, "", aerr
	}
	ctx := r.Context()
	if user != "" {
		ctx = spool.ContextWithUser(ctx, user)
	}
	return ctx, user, nil
}

// saneRequestID is compiled on first use, not in every process that links
// the server (the CLI's short commands among them).
var saneRequestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`) })

// requestID returns the client's request id when it is sane (so it can
// be logged as is), else a fresh one.
func requestID(got string) string {
	if saneRequestID().MatchString(got) {
		return got
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestContext is the context the middleware gives a request: its id
// and, once the request is authenticated, who it acts as. Both are one
// value found by requestKey, so that a request costs one context, not
// one per value.
type requestContext struct {
	context.Context
	id            string
	ident         Identity
	authenticated bool
}

type requestKey struct{}

// Value returns the requestContext itself for requestKey; the parent
// answers every other key.
func (c *requestContext) Value(key any) any {
	if key == (requestKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// requestOf returns the middleware's context of the request ctx belongs
// to, or nil.
func requestOf(ctx context.Context) *requestContext {
	c, _ := ctx.Value(requestKey{}).(*requestContext)
	return c
}

// RequestIDFromContext returns the id of the request ctx belongs to.
func RequestIDFromContext(ctx context.Context) string {
	if c := requestOf(ctx); c != nil {
		return c.id
	}
	return ""
}

// LogHandler wraps h so that records logged with a request's context
// carry the request id. The server wraps its own logger with it; give it
// to the agent's logger too (spool.Config.Logger) so that the runtime's
// lines about a request carry its id.
func LogHandler(h slog.Handler) slog.Handler {
	if r, ok := h.(requestIDHandler); ok {
		return r
	}
	return requestIDHandler{h}
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestIDFromContext(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("requestId", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// statusWriter records the status and size of a response. It passes
// Flush and the rest through Unwrap, for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code  int
	n     int64
	wrote bool
	// onStream, when set, is called when the response turns out to be
	// an event stream; it returns what to call when the stream ends.
	onStream func()
	stream   func()
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
		w.opened()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
		w.opened()
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// opened runs onStream when the response just started is an event stream.
func (w *statusWriter) opened() {
	if w.onStream != nil && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.onStream()
	}
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}
