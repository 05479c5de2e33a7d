package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/telemetry"
)

// logFlags choose the format and level of a server's log.
type logFlags struct {
	format, level string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "text", "log lines as text (key=value) or json (one JSON object a line)")
	fs.StringVar(&l.level, "log-level", "info", "the least severe lines logged: debug, info, warn or error")
}

// logger returns the log the flags ask for, every line about a request
// carrying its id (server.LogHandler).
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usagef("--log-level must be debug, info, warn or error (got %q)", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(l.format) {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, usagef("--log-format must be text or json (got %q)", l.format)
	}
	return slog.New(server.LogHandler(h)), nil
}

// observability is a command's OpenTelemetry: what the OTEL_* variables
// ask to export, and the Prometheus handler --metrics asks for.
type observability struct {
	p  *telemetry.Providers
	on bool // something is recorded: an export, or Prometheus
}

// startTelemetry starts what the environment and prometheus ask for. The
// providers become the global ones too (and the W3C trace context the
// propagator, and log the error handler), so that libraries that record
// on their own (a database driver, an HTTP client) join the same traces.
func startTelemetry(ctx context.Context, log *slog.Logger, prometheus bool) (*observability, error) {
	p, err := telemetry.Start(ctx, telemetry.Config{ServiceVersion: moduleVersion(), Prometheus: prometheus})
	if err != nil {
		return nil, usagef("OpenTelemetry: %v (check the OTEL_* variables)", err)
	}
	o := &observability{p: p, on: len(p.Exporting) > 0 || p.Metrics != nil}
	if !o.on {
		return o, nil
	}
	otel.SetTracerProvider(p.TracerProvider)
	otel.SetMeterProvider(p.MeterProvider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	// The SDK's own failures (an export the collector refused or never
	// answered) are lines of this log, in its format and at its level;
	// OpenTelemetry's default prints them with package log, a plain line
	// among the JSON ones.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("telemetry: export failed", "error", err) }))
	if len(p.Exporting) > 0 {
		log.Info("exporting telemetry (OTEL_* variables)", "signals", strings.Join(p.Exporting, ","))
	}
	return o, nil
}

// instrument adds the OpenTelemetry observer to cfg and measures its
// store, when anything is recorded.
func (o *observability) instrument(cfg *spool.Config, storeURL string) error {
	if !o.on {
		return nil
	}
	obs, err := telemetry.NewObserver(o.p.TracerProvider, o.p.MeterProvider)
	if err != nil {
		return err
	}
	cfg.Observers = append(cfg.Observers, obs)
	st, err := telemetry.InstrumentStore(cfg.Store, storeName(storeURL), o.p.MeterProvider)
	if err != nil {
		return err
	}
	cfg.Store = st
	return nil
}

// serverOptions gives the server the providers, and /metrics when the
// metrics are served on the server's own listener.
func (o *observability) serverOptions(opts *server.Options, metricsOnAPI bool) {
	if !o.on {
		return
	}
	opts.TracerProvider, opts.MeterProvider = o.p.TracerProvider, o.p.MeterProvider
	if metricsOnAPI {
		opts.Metrics = o.p.Metrics
	}
}

// shutdown flushes what is still buffered, for at most five seconds.
func (o *observability) shutdown(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := o.p.Shutdown(ctx); err != nil {
		log.Warn("telemetry: not everything was exported", "error", err)
	}
}

// storeName names a store in metrics by its URL's scheme: "file",
// "memory", "sqlite", "postgres", "redis".
func storeName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return "unknown"
	}
	switch s := strings.ToLower(u.Scheme); s {
	case "postgresql":
		return "postgres"
	case "rediss":
		return "redis"
	default:
		for _, known := range store.Schemes() {
			if s == known {
				return s
			}
		}
	}
	return "other"
}

// serveMetrics serves h at GET /metrics on ln, without keys (--metrics-addr
// is for a private address), until the returned function is called.
func serveMetrics(log *slog.Logger, ln net.Listener, h http.Handler) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the metrics listener stopped", "error", err)
		}
	}()
	return func() { srv.Close() }
}

// moduleVersion is the version of the binary as a short string: the
// module version go install stamped, or "devel" and the commit for a
// build from a clone.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}
