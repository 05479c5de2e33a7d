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
                   [--channels slack,telegram,discord] [--read-timeout 30s]`

// serveFlags are the flags of spool serve.
type serveFlags struct {
	common
	addr, keysFile, apiKey       string
	modelSpec, baseURL, modelKey string
	scope, instructions, mode    string
	allowHosts, allowOrigins     string
	insecure                     bool
	maxBody                      int64
	keepAlive, grace, readBody   time.Duration
}

// runServe runs the HTTP server until SIGINT or SIGTERM (or ctx ends),
// then shuts down gracefully: no new connections, running turns get
// --grace to finish, and those still running then are stopped and
// recorded cancelled.
func runServe(ctx context.Context, env *environ, args []string) error {
	var f serveFlags
	fs := newFlagSet("serve", serveSynopsis, env)
	f.common.register(fs, env)
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&f.keysFile, "keys", env.getenv("SPOOL_KEYS"), `keys file: {"keys":[{"key":"…","user":"alice"},{"key":"…","project":true}]} (env SPOOL_KEYS)`)
	fs.StringVar(&f.apiKey, "api-key", env.getenv("SPOOL_API_KEY"), "one bearer key with project access (env SPOOL_API_KEY)")
	fs.StringVar(&f.modelSpec, "model", env.getenv("SPOOL_MODEL"), "echo, openai:MODEL, anthropic:MODEL or ollama:MODEL (env SPOOL_MODEL; default echo)")
	fs.StringVar(&f.baseURL, "base-url", "", "the model provider's endpoint")
	fs.StringVar(&f.modelKey, "model-key", "", "the model provider's key (default from OPENAI_API_KEY, ANTHROPIC_API_KEY)")
	fs.StringVar(&f.scope, "scope", "project", "project: one shared set of sessions; user: each user their own")
	fs.StringVar(&f.instructions, "instructions", "", "the agent's instructions")
	fs.StringVar(&f.mode, "mode", "ask", "tool mode of new sessions: ask, auto or off")
	fs.StringVar(&f.allowHosts, "allow-host", "", "comma-separated Host names accepted besides loopback ones (/mcp, and every route without keys)")
	fs.StringVar(&f.allowOrigins, "allow-origin", "", "comma-separated Origins accepted by /mcp besides the server's own")
	fs.BoolVar(&f.insecure, "insecure-no-auth", false, "allow listening on a non-loopback address without keys (anyone who reaches it has project access)")
	fs.Int64Var(&f.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body in bytes")
	fs.DurationVar(&f.keepAlive, "keep-alive", 15*time.Second, "interval of keep-alive comments in event streams")
	fs.DurationVar(&f.readBody, "read-timeout", server.DefaultReadTimeout, "how long a request's body may take to arrive (event streams are not bounded by it)")
	fs.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGINT/SIGTERM, how long running turns get to finish before they are cancelled")
	var chf channelFlags // channels.go
	chf.register(fs.FlagSet)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments (got %q)", pos[0])
	}
	if f.user != "" {
		return usagef("serve takes users from its keys, not --user (use --scope user and a keys file)")
	}
	if !transcript.ToolMode(f.mode).Valid() {
		return usagef("--mode must be ask, auto or off")
	}
	if f.scope != string(spool.ScopeProject) && f.scope != string(spool.ScopeUser) {
		return usagef("--scope must be project or user")
	}
	if f.maxBody <= 0 || f.keepAlive <= 0 || f.readBody <= 0 || f.grace < 0 {
		return usagef("--max-body, --keep-alive and --read-timeout must be positive, --grace not negative")
	}
	if _, err := f.common.namespace(); err != nil {
		return err
	}
	log := slog.New(server.LogHandler(slog.NewTextHandler(env.stderr, nil)))
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

	channels, err := chf.drivers(env, log)
	if err != nil {
		return err
	}

	mf := modelFlags{spec: f.modelSpec, baseURL: f.baseURL, apiKey: f.modelKey}
	m, err := mf.open(env)
	if err != nil {
		return err
	}
	st, err := f.common.open(ctx, env)
	if err != nil {
		return err
	}
	agent, err := spool.New(spool.Config{
		Name:         f.agent,
		Instructions: f.instructions,
		Model:        m,
		Tools:        demoTools(),
		Store:        st,
		Scope:        spool.Scope(f.scope),
		ToolMode:     transcript.ToolMode(f.mode),
		Logger:       log,
	})
	if err != nil {
		return err
	}
	defer agent.Close()
	h := server.New(agent, server.Options{
		Keys:           keys,
		MaxBodyBytes:   f.maxBody,
		ReadTimeout:    f.readBody,
		KeepAlive:      f.keepAlive,
		Logger:         log,
		AllowedHosts:   append(splitList(f.allowHosts), boundHost(f.addr)...),
		AllowedOrigins: splitList(f.allowOrigins),
		UI:             web.Handler(), // the chat page at /
		Channels:       channels,
	})
	defer func() {
		// Chat turns belong to no HTTP request: they get a grace period
		// of their own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.grace)
		defer cancel()
		h.Shutdown(ctx)
	}()
	startChannels(ctx, env, log, channels)

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	return serve(ctx, env, log, ln, h, f.grace, agent.Name())
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
		keys = keys.Merge(k)
	}
	return keys, nil
}

// serve serves h on ln until a signal or ctx's end, then shuts down.
func serve(ctx context.Context, env *environ, log *slog.Logger, ln net.Listener, h http.Handler, grace time.Duration, agent string) error {
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
	log.Info("shutting down: no new requests; running turns get the grace period", "grace", grace)
	shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	err := srv.Shutdown(shCtx)
	cancel()
	if err != nil {
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
