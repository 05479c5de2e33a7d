package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

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
	// /mcp accepts besides the server's own origin.
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
}

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
// Other routes keep working.
func (s *Server) Close() error {
	err := s.chat.Close()
	for _, c := range s.channels {
		if cerr := c.driver.Close(); err == nil {
			err = cerr
		}
	}
	s.dispatch.Wait()
	for _, c := range s.channels {
		c.dispatch.Wait()
	}
	return err
}

// Shutdown closes the server with a grace period for the turns of
// Options.Channels: their drivers stop taking messages at once (a driver
// with a Drain method, as the chat platforms have; their webhooks answer
// 503 and the platforms deliver again later), the turns they run get until
// ctx ends to finish, and then Close stops what still runs. A chat
// platform's turn belongs to no HTTP request, so an http.Server's own
// Shutdown does not wait for it.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.channels {
		if d, ok := c.driver.(interface{ Drain() }); ok {
			d.Drain()
		}
	}
	done := make(chan struct{})
	go func() {
		for _, c := range s.channels {
			c.dispatch.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return s.Close()
}

// routes registers every route, and for each path a catch-all that
// answers other methods 405 with Allow.
func (s *Server) routes() {
	allow := map[string][]string{}
	handle := func(method, path string, h http.HandlerFunc) {
		s.mux.HandleFunc(method+" "+path, h)
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
	handle("GET", "/v1/sessions/{id}/messages", s.handleMessages)
	handle("GET", "/v1/sessions/{id}/history", s.handleHistory)
	handle("GET", "/v1/sessions/{id}/approvals", s.handleApprovals)
	handle("POST", "/v1/sessions/{id}/approvals/{approvalId}", s.handleDecide)
	handle("POST", "/api/chat", s.handleAIChat)
	// Stateless MCP: every request is a POST; there is no session to
	// resume (GET) or end (DELETE).
	handle("POST", "/mcp", s.mcpHandler().ServeHTTP)
	for _, c := range s.channels {
		if c.prefix != "" {
			s.mux.Handle(c.prefix, c.driver.(http.Handler))
		}
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
		return
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, errf(http.StatusNotFound, CodeNotFound, "no such route"), errorBody{})
	})
}

// middleware wraps every request: a request id, a logger carrying it,
// panic recovery, the access log line, the Host check of keyless servers,
// authentication, the user of user-scoped agents, and the body cap.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := requestID(r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Request-Id", rid)
		// s.log's handler adds the request id of the context to every
		// record.
		log := s.log
		ctx := context.WithValue(r.Context(), requestIDKey{}, rid)
		ctx = context.WithValue(ctx, loggerKey{}, log)
		rw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(ctx)
		var ident Identity
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.ErrorContext(ctx, "handler panicked", "panic", p)
				if !rw.wrote {
					writeAPIError(rw, errf(http.StatusInternalServerError, CodeInternal, "internal error"), errorBody{})
				}
			}
			// Method, path and status only: paths carry session ids,
			// never content; the query string is left out.
			log.LogAttrs(ctx, slog.LevelInfo, "request",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rw.status()), slog.Int64("bytes", rw.n),
				slog.Duration("duration", time.Since(start)), slog.String("key", ident.Name))
		}()
		if s.isWebhook(r.URL.Path) {
			// The platform's own authentication, in the driver, comes
			// before anything is touched.
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
			r.Body = bodyDeadline(w, r, s.opts.ReadTimeout)
			next.ServeHTTP(rw, r)
			return
		}
		if s.opts.Keys.Len() == 0 && !s.hostAllowed(r.Host) {
			writeAPIError(rw, errf(http.StatusForbidden, CodeForbidden, "this server answers to loopback names only (Host "+r.Host+" is not allowed)"), errorBody{})
			return
		}
		if s.opts.UI != nil && !s.isAPIPath(r.URL.Path) {
			// The UI authenticates through the API it calls; its own
			// pages are public.
			next.ServeHTTP(rw, r)
			return
		}
		id, aerr := s.authenticate(r.Header)
		if aerr != nil {
			writeAPIError(rw, aerr, errorBody{})
			return
		}
		ident = id
		ctx = withIdentity(ctx, id)
		// The underlying writer, so that an oversized body also closes
		// the connection.
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		r.Body = bodyDeadline(w, r, s.opts.ReadTimeout)
		r = r.WithContext(ctx)
		next.ServeHTTP(rw, r)
	})
}

// isAPIPath reports whether path belongs to a route of the server rather
// than the UI.
func (s *Server) isAPIPath(path string) bool {
	switch {
	case path == "/invoke", path == "/chat", path == "/api/chat", path == "/mcp",
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

var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID returns the client's request id when it is sane (so it can
// be logged as is), else a fresh one.
func requestID(got string) string {
	if saneRequestID.MatchString(got) {
		return got
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type requestIDKey struct{}
type loggerKey struct{}

// RequestIDFromContext returns the id of the request ctx belongs to.
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
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
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
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
