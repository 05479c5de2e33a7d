package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
)

// benchFlags are the flags of spool bench.
type benchFlags struct {
	url, key, prompt string
	storeURL, model  string
	concurrency      int
	sessions         int
	duration         time.Duration
	allowExisting    bool
}

// benchAgent is the agent of the server bench starts itself: its
// sessions are never another agent's, so they can push no one's session
// out of a store's retention.
const benchAgent = "spool-bench"

// benchMode returns the command that runs bench in mode (invoke or chat).
func benchMode(mode string) func(context.Context, *environ, []string) error {
	return func(ctx context.Context, env *environ, args []string) error {
		return runBench(ctx, env, mode, args)
	}
}

// runBench load-tests a spool server from this process: a bounded number
// of workers for a bounded time. Without --url it starts a server of its
// own on loopback (agent spool-bench, on --store, default memory:) and
// deletes the sessions it made when it is done; with --url it drives that
// server (run it against your own server only), and refuses one that
// holds sessions bench did not make, unless --allow-existing. Requests
// still running when the time is up are waited for and counted: every
// answer the server gave, a 5xx included, is in the report.
func runBench(ctx context.Context, env *environ, mode string, args []string) error {
	var f benchFlags
	fs := newFlagSet("bench "+mode, "spool bench "+mode+" [--url URL | --store URL --model SPEC] [--concurrency N] [--duration D] [--sessions N] [--key K]", env)
	fs.StringVar(&f.url, "url", "", "the server to drive (default: start one here, on loopback, with agent "+benchAgent+")")
	fs.StringVar(&f.storeURL, "store", "memory:", "without --url: the store of the server bench starts")
	fs.StringVar(&f.model, "model", "echo", "without --url: the model of the server bench starts")
	fs.StringVar(&f.key, "key", env.getenv("SPOOL_API_KEY"), "with --url: the bearer key (env SPOOL_API_KEY)")
	fs.StringVar(&f.prompt, "prompt", "hello from spool bench", "the prompt each request sends")
	fs.IntVar(&f.concurrency, "concurrency", 16, "requests in flight at once")
	fs.IntVar(&f.sessions, "sessions", 16, "sessions the requests are spread over")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send requests (at most 10m)")
	fs.BoolVar(&f.allowExisting, "allow-existing", false, "with --url: drive a server that holds sessions bench did not make (its store's retention may then delete some of them)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("bench %s takes no arguments (got %q)", mode, pos[0])
	}
	if f.concurrency < 1 || f.concurrency > 10000 || f.sessions < 1 || f.duration <= 0 || f.duration > 10*time.Minute {
		return usagef("--concurrency 1-10000, --sessions at least 1, --duration up to 10m")
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var run [4]byte
	rand.Read(run[:])
	prefix := "bench-" + hex.EncodeToString(run[:]) + "-"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: f.concurrency, MaxConnsPerHost: f.concurrency}}

	if f.url == "" {
		if given["key"] || given["allow-existing"] {
			return usagef("--key and --allow-existing are for a server given with --url")
		}
		url, stop, err := benchServer(ctx, env, &f, prefix)
		if err != nil {
			return err
		}
		defer stop()
		f.url = url
	} else {
		if given["store"] || given["model"] {
			return usagef("--store and --model set up the server bench starts; a server given with --url has its own")
		}
		f.url = strings.TrimSuffix(f.url, "/")
		if err := benchPreflight(ctx, client, &f); err != nil {
			return err
		}
	}

	var (
		mu      sync.Mutex
		samples [][]time.Duration // per measure
		errs    int
		byCode  = map[int]int{}
		firstE  string
		wg      sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(f.duration)
	for w := range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No new request after the deadline; one under way finishes
			// and counts.
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				sid := prefix + fmt.Sprint((w+i*f.concurrency)%f.sessions)
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				var got []time.Duration
				var err error
				if mode == "invoke" {
					got, err = benchInvoke(rctx, client, &f, sid)
				} else {
					got, err = benchChat(rctx, client, &f, sid)
				}
				cancel()
				if ctx.Err() != nil {
					return // the user stopped the run
				}
				mu.Lock()
				if err != nil {
					errs++
					var se *statusError
					if errors.As(err, &se) {
						byCode[se.code]++
					}
					if firstE == "" {
						firstE = err.Error()
					}
				} else {
					for len(samples) < len(got) {
						samples = append(samples, nil)
					}
					for k, d := range got {
						samples[k] = append(samples[k], d)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	n := 0
	if len(samples) > 0 {
		n = len(samples[0])
	}
	fmt.Fprintf(env.stdout, "%s: %d requests in %s over %d sessions, concurrency %d, %d errors%s\n", mode, n+errs, elapsed.Round(time.Millisecond), f.sessions, f.concurrency, errs, codeSummary(byCode))
	fmt.Fprintf(env.stdout, "rps: %.1f\n", float64(n)/elapsed.Seconds())
	labels := []string{"latency"}
	if mode == "chat" {
		labels = []string{"first byte", "first text", "whole stream"}
	}
	for k, s := range samples {
		slices.Sort(s)
		fmt.Fprintf(env.stdout, "%-12s p50 %s  p90 %s  p99 %s  max %s\n", labels[k]+":", pct(s, 50), pct(s, 90), pct(s, 99), s[len(s)-1].Round(time.Microsecond))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errs > 0 {
		return fmt.Errorf("%d requests failed; the first: %s", errs, firstE)
	}
	if n == 0 {
		return fmt.Errorf("no request completed in %s", f.duration)
	}
	return nil
}

// codeSummary is " (503 ×5, 500 ×1)" for the error statuses seen.
func codeSummary(byCode map[int]int) string {
	if len(byCode) == 0 {
		return ""
	}
	codes := slices.Sorted(maps.Keys(byCode))
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d ×%d", c, byCode[c]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// statusError is an answer other than 200.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.code, e.body) }

// benchServer starts the server bench drives when no --url is given, and
// returns its URL and what stops it (deleting the sessions this run made).
func benchServer(ctx context.Context, env *environ, f *benchFlags, prefix string) (string, func(), error) {
	mf := modelFlags{spec: f.model}
	m, err := mf.open(env)
	if err != nil {
		return "", nil, err
	}
	st, err := openStore(ctx, env, "--store", f.storeURL, false)
	if err != nil {
		return "", nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	agent, err := spool.New(spool.Config{Name: benchAgent, Model: m, Tools: demoTools(), Store: st, Logger: quiet})
	if err != nil {
		store.Close(st)
		return "", nil, err
	}
	h := server.New(agent, server.Options{Logger: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.Close()
		agent.Close()
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		h.Close()
		// Leave the store as it was: this run's sessions go.
		for i := range f.sessions {
			agent.DeleteSession(sctx, prefix+fmt.Sprint(i))
		}
		agent.Close()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// benchPreflight checks that the server at --url answers, with the key,
// and holds no session bench did not make (unless --allow-existing): a
// store's retention (the file store keeps the newest 50 sessions) would
// push those out to make room for bench's.
func benchPreflight(ctx context.Context, c *http.Client, f *benchFlags) error {
	r, err := http.NewRequestWithContext(ctx, "GET", f.url+"/v1/sessions?limit=20", nil)
	if err != nil {
		return usagef("--url: %v", err)
	}
	if f.key != "" {
		r.Header.Set("Authorization", "Bearer "+f.key)
	}
	res, err := c.Do(r)
	if err != nil {
		return fmt.Errorf("--url %s: %w", f.url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		hint := ""
		if res.StatusCode == http.StatusUnauthorized {
			hint = " (give the server's key with --key or SPOOL_API_KEY)"
		}
		return fmt.Errorf("--url %s: listing sessions: status %d%s: %s", f.url, res.StatusCode, hint, bytes.TrimSpace(b))
	}
	if f.allowExisting {
		return nil
	}
	var page struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		return fmt.Errorf("--url %s does not answer like a spool server: %v", f.url, err)
	}
	for _, s := range page.Sessions {
		if !strings.HasPrefix(s.ID, "bench-") {
			return fmt.Errorf("the server at %s holds sessions bench did not make (%q, …): bench's sessions could push them out of its store's retention. Run bench without --url (it starts a server of its own), point it at a server of its own (spool serve --agent %s), or pass --allow-existing", f.url, s.ID, benchAgent)
		}
	}
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	i = min(max(i-1, 0), len(sorted)-1)
	return sorted[i].Round(time.Microsecond)
}

func benchRequest(ctx context.Context, f *benchFlags, path string, body any) (*http.Request, error) {
	b, _ := json.Marshal(body)
	r, err := http.NewRequestWithContext(ctx, "POST", f.url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	if f.key != "" {
		r.Header.Set("Authorization", "Bearer "+f.key)
	}
	return r, nil
}

// benchInvoke sends one /invoke and returns its latency.
func benchInvoke(ctx context.Context, c *http.Client, f *benchFlags, sid string) ([]time.Duration, error) {
	r, err := benchRequest(ctx, f, "/invoke", map[string]string{"prompt": f.prompt, "sessionId": sid})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	d := time.Since(start)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, &statusError{res.StatusCode, string(bytes.TrimSpace(b))}
	}
	return []time.Duration{d}, nil
}

// benchChat sends one /chat as SSE and returns the times to the first
// byte of the body, to the first text event and to the end.
func benchChat(ctx context.Context, c *http.Client, f *benchFlags, sid string) ([]time.Duration, error) {
	r, err := benchRequest(ctx, f, "/chat", map[string]string{"text": f.prompt, "sessionId": sid})
	if err != nil {
		return nil, err
	}
	r.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	res, err := c.Do(r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return nil, &statusError{res.StatusCode, string(bytes.TrimSpace(b))}
	}
	br := bufio.NewReader(res.Body)
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	first := time.Since(start)
	var text time.Duration
	ended := false
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "event: text") && text == 0 {
			text = time.Since(start)
		}
		if strings.HasPrefix(line, "event: turn_end") {
			ended = true
		}
		if strings.HasPrefix(line, "event: error") {
			return nil, fmt.Errorf("the stream ended with an error event")
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if !ended || text == 0 {
		return nil, fmt.Errorf("the stream ended without text and turn_end")
	}
	return []time.Duration{first, text, time.Since(start)}, nil
}
