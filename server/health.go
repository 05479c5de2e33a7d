package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/store"
)

// DefaultReadyTimeout is the default of Options.ReadyTimeout.
const DefaultReadyTimeout = 2 * time.Second

// readyReuse is how long one store check answers GET /readyz (or
// Options.ReadyTimeout when shorter): a burst of probes, which need no
// key, costs the store one check a second.
const readyReuse = time.Second

// Health is the body of GET /healthz and GET /readyz.
type Health struct {
	// Status is "ok" (healthz), "ready" or "unavailable" (readyz).
	Status string `json:"status"`
	// Checks are readyz's checks by name, each "ok" or why it failed:
	// store ("ok", "timeout", "error"), channels ("ok", "closed"),
	// shutdown ("ok", "draining").
	Checks map[string]string `json:"checks,omitempty"`
	// Failed names the checks that failed, in that order.
	Failed []string `json:"failed,omitempty"`
	// Version is Options.Version, when set.
	Version string `json:"version,omitempty"`
}

// The readiness checks, in the order Failed lists them.
var readyChecks = []string{"shutdown", "channels", "store"}

// handleHealthz answers GET /healthz: the process is up and serving. It
// touches nothing, the store least of all, so that a slow database never
// gets a healthy process restarted.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, Health{Status: "ok", Version: s.opts.Version})
}

// handleReadyz answers GET /readyz: 200 when the store answers within
// Options.ReadyTimeout, the channels are open and the server is not
// shutting down; 503 naming the failed checks otherwise.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	h := Health{Status: "ready", Version: s.opts.Version, Checks: map[string]string{
		"shutdown": "ok",
		"channels": "ok",
		"store":    s.ready.check(r.Context(), s),
	}}
	if s.draining.Load() {
		h.Checks["shutdown"] = "draining"
	}
	if s.closed.Load() {
		h.Checks["channels"] = "closed"
	}
	for _, name := range readyChecks {
		if h.Checks[name] != "ok" {
			h.Failed = append(h.Failed, name)
		}
	}
	status := http.StatusOK
	if len(h.Failed) > 0 {
		h.Status, status = "unavailable", http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, h)
}

// readiness runs the store check of /readyz: one at a time, its result
// reused for readyReuse, so that probes never pile up on a slow store.
type readiness struct {
	mu      sync.Mutex
	running chan struct{} // closed when the check in flight ends
	at      time.Time     // when result was found
	result  string
}

// check returns the store's state: "ok", "timeout" or "error". It never
// says more: the error of a store can name its URL or its host.
func (rd *readiness) check(ctx context.Context, s *Server) string {
	rd.mu.Lock()
	if !rd.at.IsZero() && time.Since(rd.at) < min(readyReuse, s.opts.ReadyTimeout) {
		res := rd.result
		rd.mu.Unlock()
		return res
	}
	if rd.running == nil {
		rd.running = make(chan struct{})
		go rd.run(s)
	}
	done := rd.running
	rd.mu.Unlock()
	// The wait is bounded here too, not only by the check's context: a
	// store may not honour a context's deadline (go-redis does not, by
	// default). A check still running past the bound goes on alone, and
	// the next probe waits on it rather than starting another.
	bound := time.NewTimer(s.opts.ReadyTimeout)
	defer bound.Stop()
	select {
	case <-done:
		rd.mu.Lock()
		defer rd.mu.Unlock()
		return rd.result
	case <-bound.C:
		return "timeout"
	case <-ctx.Done():
		return "timeout"
	}
}

// run checks the store, bounded by Options.ReadyTimeout, and records the
// result for the probes waiting on it.
func (rd *readiness) run(s *Server) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ReadyTimeout)
	defer cancel()
	err := store.Ping(ctx, s.agent.Store(), store.Namespace{Agent: s.agent.Name()})
	res := "ok"
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		res = "timeout"
	default:
		res = "error"
	}
	if err != nil {
		s.log.Warn("readiness: the store did not answer", "check", res, "timeout", s.opts.ReadyTimeout)
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.result, rd.at = res, time.Now()
	close(rd.running)
	rd.running = nil
}

// Drain makes GET /readyz answer 503 ("shutdown": "draining") from now
// on, so that a load balancer stops sending requests here; everything
// else is served as before. Call it when shutdown begins, some seconds
// before Shutdown (spool serve --drain-delay): that is the time a load
// balancer needs to see the 503.
func (s *Server) Drain() { s.draining.Store(true) }

// inflight counts the requests being served, so that Shutdown can wait
// for them. It is two atomic operations a request; the channel is only
// signalled once shutdown has begun.
type inflight struct {
	n    atomic.Int64
	wait atomic.Bool
	idle chan struct{} // buffered: one wake-up at a time
}

func (f *inflight) start() { f.n.Add(1) }

func (f *inflight) done() {
	if f.n.Add(-1) == 0 && f.wait.Load() {
		select {
		case f.idle <- struct{}{}:
		default:
		}
	}
}

// until waits until no request is being served, or ctx ends.
func (f *inflight) until(ctx context.Context) error {
	f.wait.Store(true)
	for f.n.Load() > 0 {
		select {
		case <-f.idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// isProbe reports whether path is a health route: public, and answered
// during shutdown too.
func isProbe(path string) bool { return path == "/healthz" || path == "/readyz" }

// shuttingDownError answers a request that came after Shutdown began.
func shuttingDownError() *apiError {
	return stoppingError("the server is shutting down; retry (another replica, or this one once restarted)", 1)
}
