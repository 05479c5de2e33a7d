package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// route is the route a request was served by: the mux pattern it matched
// ("GET /v1/sessions/{id}") and its path part ("/v1/sessions/{id}"), the
// name logs and metrics use. A raw path is never used: it holds session
// ids, and an attacker chooses it.
type route struct{ pattern, path string }

// routeOf returns the route of r. served is the request the mux was given,
// which carries the pattern it matched; a request refused before the mux
// (a missing key, a foreign Host) is looked up without being served.
func (s *Server) routeOf(r, served *http.Request) route {
	pattern := ""
	if served != nil {
		pattern = served.Pattern
	}
	if pattern == "" {
		_, pattern = s.mux.Handler(r)
	}
	path := pattern
	if i := strings.IndexByte(pattern, '/'); i >= 0 {
		path = pattern[i:]
	}
	return route{pattern: pattern, path: path}
}

// accessLog writes the request's line: method, route, status, size,
// duration, the key's name and the user acted for; the request id comes
// with the context (LogHandler). Never the raw path, the query, a header's
// value or a body. Health probes are logged at debug level: a load
// balancer asks every few seconds.
func (s *Server) accessLog(ctx context.Context, r *http.Request, rw *statusWriter, path string, ident Identity, d time.Duration) {
	level := slog.LevelInfo
	if isProbe(r.URL.Path) {
		level = slog.LevelDebug
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	// The record is made here rather than by Logger.LogAttrs, which
	// walks the stack for the caller's source line on every request: the
	// line's source is always this function, so it has none.
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	rec.AddAttrs(
		slog.String("method", r.Method), slog.String("route", path),
		slog.Int("status", rw.status()), slog.Int64("bytes", rw.n),
		slog.Duration("duration", d),
	)
	if ident.Name != "" {
		rec.AddAttrs(slog.String("key", ident.Name))
	}
	if s.userScoped && (ident.User != "" || ident.Project) {
		// The user acted for: the key's own, or the one a project key
		// named (only when that name is valid: it is the client's text).
		if user, aerr := s.actor(ident, r.Header); aerr == nil && user != "" {
			rec.AddAttrs(slog.String("user", user))
		}
	}
	// A handler's error has nowhere to go, as in Logger.LogAttrs.
	_ = s.log.Handler().Handle(ctx, rec)
}
