package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// benchFlags are the flags of spool bench.
type benchFlags struct {
	url, key, prompt string
	concurrency      int
	sessions         int
	duration         time.Duration
}

// benchMode returns the command that runs bench in mode (invoke or chat).
func benchMode(mode string) func(context.Context, *environ, []string) error {
	return func(ctx context.Context, env *environ, args []string) error {
		return runBench(ctx, env, mode, args)
	}
}

// runBench load-tests a running spool server from this process: a
// bounded number of workers for a bounded time, against the URL given
// (run it against your own server only).
func runBench(ctx context.Context, env *environ, mode string, args []string) error {
	var f benchFlags
	fs := newFlagSet("bench "+mode, "spool bench "+mode+" --url URL [--concurrency N] [--duration D] [--sessions N] [--key K]", env)
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "the server's base URL")
	fs.StringVar(&f.key, "key", env.getenv("SPOOL_API_KEY"), "bearer key (env SPOOL_API_KEY)")
	fs.StringVar(&f.prompt, "prompt", "hello from spool bench", "the prompt each request sends")
	fs.IntVar(&f.concurrency, "concurrency", 16, "requests in flight at once")
	fs.IntVar(&f.sessions, "sessions", 16, "sessions the requests are spread over")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to send requests (at most 10m)")
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
	f.url = strings.TrimSuffix(f.url, "/")
	var run [4]byte
	rand.Read(run[:])
	prefix := "bench-" + hex.EncodeToString(run[:]) + "-"

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: f.concurrency, MaxConnsPerHost: f.concurrency}}
	ctx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	var (
		mu      sync.Mutex
		samples [][]time.Duration // per measure
		errs    int
		firstE  string
		wg      sync.WaitGroup
	)
	start := time.Now()
	for w := range f.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				sid := prefix + fmt.Sprint((w+i*f.concurrency)%f.sessions)
				var got []time.Duration
				var err error
				if mode == "invoke" {
					got, err = benchInvoke(ctx, client, &f, sid)
				} else {
					got, err = benchChat(ctx, client, &f, sid)
				}
				if ctx.Err() != nil {
					return // cut off by the end of the run: not counted
				}
				mu.Lock()
				if err != nil {
					errs++
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
	fmt.Fprintf(env.stdout, "%s: %d requests in %s over %d sessions, concurrency %d, %d errors\n", mode, n, elapsed.Round(time.Millisecond), f.sessions, f.concurrency, errs)
	fmt.Fprintf(env.stdout, "rps: %.1f\n", float64(n)/elapsed.Seconds())
	labels := []string{"latency"}
	if mode == "chat" {
		labels = []string{"first byte", "first text", "whole stream"}
	}
	for k, s := range samples {
		slices.Sort(s)
		fmt.Fprintf(env.stdout, "%-12s p50 %s  p90 %s  p99 %s  max %s\n", labels[k]+":", pct(s, 50), pct(s, 90), pct(s, 99), s[len(s)-1].Round(time.Microsecond))
	}
	if errs > 0 {
		return fmt.Errorf("%d requests failed; the first: %s", errs, firstE)
	}
	if n == 0 {
		return fmt.Errorf("no request completed in %s", f.duration)
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
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(b))
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
		return nil, fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(b))
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
