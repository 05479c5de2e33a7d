package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
	"github.com/spool-go/spool/web"
)

const serveSynopsis = `spool serve [--addr 127.0.0.1:8080] [--store URL] [--model SPEC] [--keys FILE] [--api-key KEY]
                   [--agent NAME] [--scope project|user] [--instructions TEXT] [--mode ask|auto|off]
                   [--channels slack,telegram,discord] [--read-timeout 30s] [--grace 30s] [--drain-delay 0s]
                   [--on-disconnect continue|cancel] [--turn-timeout 10m] [--max-queue 16]
                   [--max-watchers 10000] [--max-session-watchers 100]
                   [--metrics | --metrics-addr HOST:PORT] [--log-format text|json] [--log-level info]
                   [--config FILE] [--print-config]

Every flag is also a setting: the environment variable SPOOL_<FLAG> (--read-timeout:
SPOOL_READ_TIMEOUT) or a key of the --config file (TOML: read-timeout = "30s") sets it;
a flag wins over the environment, which wins over the file. --print-config shows the
result, secrets redacted. OpenTelemetry export follows the standard OTEL_* variables.`

// serveFlags are the flags of spool serve.
type serveFlags struct {
	common
	addr, keysFile, apiKey       string
	modelSpec, baseURL, modelKey string
	maxOutputTokens              int64
	scope, instructions, mode    string
	allowHosts, allowOrigins     string
	insecure                     bool
	maxBody                      int64
	keepAlive, grace, readBody   time.Duration
	drainDelay, readyTimeout     time.Duration
	exposeVersion                bool
	metrics                      bool
	metricsAddr                  string
	onDisconnect                 string
	turnTimeout                  time.Duration
	maxQueue                     int
	maxWatchers, maxSessionWatch int
	logs                         logFlags
	config                       string
	printConfig                  bool
}

// register defines the flags of spool serve. Each one is a setting read
// from the command line, SPOOL_<FLAG> or the --config file (config.go),
// with nothing more to write: a flag added here, or by a register method
// called from here (channelFlags, logFlags), is one too.
func (f *serveFlags) register(fs *flagSet, env *environ, chf *channelFlags) {
	f.common.register(fs, env)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&f.keysFile, "keys", "", `keys file: {"keys":[{"key":"…","user":"alice"},{"key":"…","project":true}]}`)
	secretVar(fs.FlagSet, &f.apiKey, "api-key", "", "one bearer key with project access")
	fs.StringVar(&f.modelSpec, "model", "", "echo, openai:MODEL, anthropic:MODEL or ollama:MODEL (default echo)")
	fs.StringVar(&f.baseURL, "base-url", "", "the model provider's endpoint")
	secretVar(fs.FlagSet, &f.modelKey, "model-key", "", "the model provider's key (default from OPENAI_API_KEY, ANTHROPIC_API_KEY)")
	fs.Int64Var(&f.maxOutputTokens, "max-output-tokens", 0, maxTokensUsage)
	fs.StringVar(&f.scope, "scope", "project", "project: one shared set of sessions; user: each user their own")
	fs.StringVar(&f.instructions, "instructions", "", "the agent's instructions")
	fs.StringVar(&f.mode, "mode", "ask", "tool mode of new sessions: ask, auto or off")
	fs.StringVar(&f.allowHosts, "allow-host", "", "comma-separated Host names accepted besides loopback ones (/mcp, and every route without keys)")
	fs.StringVar(&f.allowOrigins, "allow-origin", "", "comma-separated Origins accepted besides the server's own, by /mcp and, without keys, by every route that changes something")
	fs.BoolVar(&f.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without keys (anyone who reaches it has project access)")
	fs.Int64Var(&f.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.DurationVar(&f.keepAlive, "keep-alive", 15*time.Second, "interval of keep-alive comments in event streams")
	fs.DurationVar(&f.readBody, "read-timeout", server.DefaultReadTimeout, "how long a request's body may take to arrive (event streams are not bounded by it)")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long running turns get to finish before they are cancelled")
	fs.DurationVar(&f.drainDelay, "drain-delay", 0, "on SIGINT/SIGTERM, how long /readyz answers 503 while everything is still served, before new requests are refused (a load balancer's time to notice)")
	fs.DurationVar(&f.readyTimeout, "ready-timeout", server.DefaultReadyTimeout, "how long /readyz waits for the store to answer")
	fs.BoolVar(&f.exposeVersion, "expose-version", false, "name the version in /healthz and /readyz")
	fs.BoolVar(&f.metrics, "metrics", false, "serve Prometheus metrics at /metrics (behind the keys, like the API)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address instead, without keys (keep it private)")
	fs.StringVar(&f.onDisconnect, "on-disconnect", string(server.DisconnectContinue), "what a turn does when its HTTP client goes away: continue (to its end; stop it with POST /v1/sessions/{id}/stop, follow it again with /v1/sessions/{id}/events) or cancel")
	fs.DurationVar(&f.turnTimeout, "turn-timeout", server.DefaultTurnTimeout, "longest a turn runs on after its HTTP client went away; it is then recorded cancelled")
	fs.IntVar(&f.maxQueue, "max-queue", server.DefaultMaxQueue, "most /chat requests waiting on one session; more are answered 429 with Retry-After")
	fs.IntVar(&f.maxWatchers, "max-watchers", 10000, "most clients following sessions live at once (/v1/sessions/{id}/events, /api/chat/{id}/stream); more are answered 429")
	fs.IntVar(&f.maxSessionWatch, "max-session-watchers", 100, "most clients following one session live at once; more are answered 429")
	f.logs.register(fs.FlagSet)
	chf.register(fs.FlagSet)
	fs.StringVar(&f.config, "config", "", "a TOML file of settings, keys named as the flags: addr = \"0.0.0.0:8080\" (env SPOOL_CONFIG)")
	fs.BoolVar(&f.printConfig, "print-config", false, "print every setting, where it came from and its value (secrets redacted) as a config file, and exit")
	withEnvNames(fs.FlagSet)
}

// runServe runs the HTTP server until SIGINT or SIGTERM (or ctx ends),
// then shuts down gracefully: /readyz answers 503 for --drain-delay, new
// requests are refused, running turns get --grace to finish, those still
// running then are stopped and recorded cancelled, and the listener
// closes.
func runServe(ctx context.Context, env *environ, args []string) error {
	var f serveFlags
	var chf channelFlags // channels.go
	fs := newFlagSet("serve", serveSynopsis, env)
	f.register(fs, env, &chf)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments (got %q)", pos[0])
	}
	settings, err := resolveSettings(fs.FlagSet, env, f.config)
	if err != nil {
		return err
	}
	if f.printConfig {
		settings.print(env.stdout, "spool serve")
		return nil
	}
	if f.user != "" {
		return usagef("serve takes users from its keys, not --user or SPOOL_USER (use --scope user and a keys file)")
	}
	if !transcript.ToolMode(f.mode).Valid() {
		return usagef("--mode must be ask, auto or off")
	}
	if f.scope != string(spool.ScopeProject) && f.scope != string(spool.ScopeUser) {
		return usagef("--scope must be project or user")
	}
	if f.maxBody <= 0 || f.keepAlive <= 0 || f.readBody <= 0 || f.readyTimeout <= 0 || f.grace < 0 || f.drainDelay < 0 {
		return usagef("--max-body, --keep-alive, --read-timeout and --ready-timeout must be positive, --grace and --drain-delay not negative")
	}
	switch server.Disconnect(f.onDisconnect) {
	case server.DisconnectContinue, server.DisconnectCancel:
	default:
		return usagef("--on-disconnect must be continue or cancel (got %q)", f.onDisconnect)
	}
	if f.turnTimeout <= 0 || f.maxQueue <= 0 || f.maxWatchers <= 0 || f.maxSessionWatch <= 0 {
		return usagef("--turn-timeout, --max-queue, --max-watchers and --max-session-watchers must be positive")
	}
	if _, err := f.common.namespace(); err != nil {
		return err
	}
	log, err := f.logs.logger(env.stderr)
	if err != nil {
		return err
	}
	keys, err := f.loadKeys(env)
	if err != nil {
		return err
	}
	loopback, err := isLoopback(f.addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	if keys.Len() == 0 && !loopback {
		if !f.insecure {
			return usagef("refusing to listen on %s without keys: anyone who can reach it would have access. Give --keys FILE or --api-key KEY, listen on 127.0.0.1, or pass --insecure-no-auth", f.addr)
		}
		log.Warn("listening on a non-loopback address without keys (--insecure-no-auth)", "addr", f.addr)
	}
	if f.metricsAddr != "" {
		if _, err := isLoopback(f.metricsAddr); err != nil {
			return usagef("--metrics-addr: %v", err)
		}
	}

	channels, err := chf.drivers(env, log)
	if err != nil {
		return err
	}

	mf := modelFlags{spec: f.modelSpec, baseURL: f.baseURL, apiKey: f.modelKey, maxTokens: f.maxOutputTokens}
	m, err := mf.open(env)
	if err != nil {
		return err
	}
	tel, err := startTelemetry(ctx, log, f.metrics || f.metricsAddr != "")
	if err != nil {
		return err
	}
	defer tel.shutdown(ctx, log)
	st, err := f.common.open(ctx, env)
	if err != nil {
		return err
	}
	cfg := spool.Config{
		Name:         f.agent,
		Instructions: f.instructions,
		Model:        m,
		Tools:        demoTools(),
		Store:        st,
		Scope:        spool.Scope(f.scope),
		ToolMode:     transcript.ToolMode(f.mode),
		Logger:       log,

		MaxWatchers:        f.maxWatchers,
		MaxSessionWatchers: f.maxSessionWatch,
	}
	if err := tel.instrument(&cfg, f.storeURL); err != nil {
		return err
	}
	agent, err := spool.New(cfg)
	if err != nil {
		return err
	}
	defer agent.Close()
	opts := server.Options{
		Keys:           keys,
		MaxBodyBytes:   f.maxBody,
		ReadTimeout:    f.readBody,
		ReadyTimeout:   f.readyTimeout,
		KeepAlive:      f.keepAlive,
		Logger:         log,
		AllowedHosts:   append(splitList(f.allowHosts), boundHost(f.addr)...),
		AllowedOrigins: splitList(f.allowOrigins),
		UI:             web.Handler(), // the chat page at /
		Channels:       channels,
		OnDisconnect:   server.Disconnect(f.onDisconnect),
		TurnTimeout:    f.turnTimeout,
		MaxQueue:       f.maxQueue,
	}
	if f.exposeVersion {
		opts.Version = moduleVersion()
	}
	tel.serverOptions(&opts, f.metricsAddr == "")
	h := server.New(agent, opts)
	defer h.Close() // stops what still runs on every way out
	startChannels(ctx, env, log, channels)

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	if f.metricsAddr != "" {
		mln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		stopMetrics := serveMetrics(log, mln, tel.p.Metrics)
		defer stopMetrics()
		fmt.Fprintf(env.stderr, "spool: metrics on http://%s/metrics\n", mln.Addr())
	}
	return serve(ctx, env, log, ln, h, f.drainDelay, f.grace, agent.Name())
}

// loadKeys returns the keys of --keys and --api-key together, or nil.
func (f *serveFlags) loadKeys(env *environ) (*server.APIKeys, error) {
	var keys *server.APIKeys
	if f.keysFile != "" {
		k, err := server.LoadAPIKeys(f.keysFile)
		if err != nil {
			return nil, err
		}
		if server.GroupReadable(f.keysFile) {
			fmt.Fprintf(env.stderr, "spool: warning: the keys file %s is readable by its group; chmod 600 it\n", f.keysFile)
		}
		keys = k
	}
	if f.apiKey != "" {
		k, err := server.NewAPIKeys(server.APIKey{Name: "api-key", Key: f.apiKey, Project: true})
		if err != nil {
			return nil, usagef("--api-key: %v", err)
		}
		if keys, err = keys.Merge(k); err != nil {
			return nil, usagef("--api-key: %v", err)
		}
	}
	return keys, nil
}

// serve serves h on ln until a signal or ctx's end, then shuts down in
// this order: /readyz answers 503 while everything is still served, for
// drainDelay (the time a load balancer needs to stop sending); then new
// requests are refused with 503, and those running, with their turns,
// get grace to finish; then what still runs is cancelled (and recorded
// so); then the listener closes. A second signal ends the process at
// once.
func serve(ctx context.Context, env *environ, log *slog.Logger, ln net.Listener, h *server.Server, drainDelay, grace time.Duration, agent string) error {
	sigCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Requests run under their own base context, cancelled only when the
	// grace period is over: a signal does not cut running turns short.
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	var inflight sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inflight.Add(1)
			defer inflight.Done()
			h.ServeHTTP(w, r)
		}),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// The line tests and scripts wait for: the address actually bound.
	fmt.Fprintf(env.stderr, "spool: serving agent %q on http://%s\n", agent, ln.Addr())
	select {
	case err := <-served:
		return err
	case <-sigCtx.Done():
	}
	// A second signal is someone who will not wait: it ends the process
	// at once, as signals do by default (Reset: main's NotifyContext
	// holds SIGTERM too). What was running stays open in its transcript,
	// and the session's next turn closes it as cancelled.
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	h.Drain()
	if drainDelay > 0 {
		log.Info("draining: /readyz answers 503; requests are still served", "drainDelay", drainDelay)
		time.Sleep(drainDelay)
	}
	log.Info("shutting down: new requests are refused; running turns get the grace period (a second signal exits at once)", "grace", grace)
	shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	err := h.Shutdown(shCtx)
	graceOver := shCtx.Err() != nil
	cancel()
	if graceOver {
		// Grace is over: stop what still runs. Each turn is recorded
		// cancelled (the runtime appends without the caller's
		// cancellation) before its handler returns.
		log.Warn("grace period over: cancelling running turns")
		cancelBase()
		done := make(chan struct{})
		go func() { inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			log.Error("requests still running 30s after cancellation; exiting anyway")
		}
	}
	if err != nil {
		log.Warn("closing the channels", "error", err)
	}
	// Nothing is left to answer: the listener closes.
	closeCtx, cancelClose := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelClose()
	if err := srv.Shutdown(closeCtx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// isLoopback reports whether addr (host:port) listens on loopback only.
// An empty host means every interface.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// boundHost returns the host of addr when it names one address (not every
// interface): requests that name the server by it are not rebinding.
func boundHost(addr string) []string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil
	}
	return []string{host}
}
