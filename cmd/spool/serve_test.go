package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// startServe starts spool serve on a free loopback port and waits until it
// listens; the test's end stops it.
func startServe(t *testing.T, args ...string) *spooltest.Server {
	t.Helper()
	return spooltest.Serve(t, spooltest.Options{Stop: os.Kill}, args...)
}

func httpDo(t *testing.T, method, url, key string, body any, accept string) (*http.Response, []byte) {
	t.Helper()
	res := httpOpen(t, context.Background(), method, url, key, body, accept)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func httpOpen(t *testing.T, ctx context.Context, method, url, key string, body any, accept string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type sse struct{ name, data string }

// parseSSE reads events until the stream ends.
func parseSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			if cur.name != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[len("data: "):]
		}
	}
	return out
}

const e2eKey = "e2e-key-0123456789abcdef"

// The whole server as a process on a loopback port, driven by a real
// HTTP client: keys, /invoke, /chat as SSE, an approval, the session API.
func TestServeEndToEnd(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "spool.db")
	p := startServe(t, "--store", db, "--api-key", e2eKey, "--keep-alive", "50ms")

	if res, _ := httpDo(t, "GET", p.URL+"/v1/sessions", "", nil, ""); res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("without a key: %d", res.StatusCode)
	}
	res, b := httpDo(t, "POST", p.URL+"/invoke", e2eKey, map[string]string{"prompt": "hello"}, "")
	if res.StatusCode != 200 || !strings.Contains(string(b), `"text":"echo: hello"`) || !strings.Contains(string(b), `"sessionId":"http"`) {
		t.Fatalf("invoke: %d %s", res.StatusCode, b)
	}

	sres := httpOpen(t, context.Background(), "POST", p.URL+"/chat", e2eKey, map[string]string{"sessionId": "e2e", "text": `/call save_note {"text":"buy milk"}`}, "text/event-stream")
	events := parseSSE(t, sres.Body)
	sres.Body.Close()
	var got []string
	var approvalID string
	for _, ev := range events {
		got = append(got, ev.name)
		if ev.name == "approval_request" {
			var e struct{ Approval struct{ ID, Tool string } }
			json.Unmarshal([]byte(ev.data), &e)
			approvalID = e.Approval.ID
		}
	}
	if strings.Join(got, ",") != "session,turn_start,step_start,tool_call,step_end,approval_request,turn_end" || approvalID == "" {
		t.Fatalf("chat events %v", got)
	}

	res, b = httpDo(t, "GET", p.URL+"/v1/sessions/e2e/approvals", e2eKey, nil, "")
	if res.StatusCode != 200 || !strings.Contains(string(b), approvalID) {
		t.Fatalf("approvals: %d %s", res.StatusCode, b)
	}
	sres = httpOpen(t, context.Background(), "POST", p.URL+"/v1/sessions/e2e/approvals/"+approvalID, e2eKey, map[string]string{"decision": "allow"}, "text/event-stream")
	events = parseSSE(t, sres.Body)
	sres.Body.Close()
	last := events[len(events)-1]
	if last.name != "turn_end" || !strings.Contains(last.data, "saved note: buy milk") {
		t.Fatalf("approval stream ends with %+v", last)
	}

	res, b = httpDo(t, "GET", p.URL+"/v1/sessions?limit=10", e2eKey, nil, "")
	var list struct {
		Sessions []struct{ ID string }
	}
	json.Unmarshal(b, &list)
	if res.StatusCode != 200 || len(list.Sessions) != 2 {
		t.Fatalf("list: %d %s", res.StatusCode, b)
	}
	res, b = httpDo(t, "GET", p.URL+"/v1/sessions/e2e/messages?order=asc", e2eKey, nil, "")
	if res.StatusCode != 200 || strings.Count(string(b), `"role"`) != 4 {
		t.Fatalf("messages: %d %s", res.StatusCode, b)
	}
	if res, _ := httpDo(t, "DELETE", p.URL+"/v1/sessions/e2e", e2eKey, nil, ""); res.StatusCode != 204 {
		t.Fatalf("delete: %d", res.StatusCode)
	}

	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(p.Stderr.String(), "buy milk") {
		t.Fatalf("content in the server's log:\n%s", p.Stderr.String())
	}
}

// slowProvider is an OpenAI-compatible endpoint that streams words slowly,
// so that a turn is still running when the server is told to stop.
func slowProvider(t *testing.T, words int, every time.Duration) *httptest.Server {
	started := make(chan struct{}, 16)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		started <- struct{}{}
		chunk := func(delta string, finish string) {
			fr := "null"
			if finish != "" {
				fr = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"slow\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":%s}]}\n\n", delta, fr)
			w.(http.Flusher).Flush()
		}
		for i := range words {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(every):
			}
			chunk(fmt.Sprintf("w%d ", i), "")
		}
		chunk("", "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// chatUntilText starts a /chat turn on session id as an event stream and
// reads it until its first text, so the turn is running; the rest of the
// stream is the caller's, closed when the test ends.
func chatUntilText(t *testing.T, url, id string) *bufio.Reader {
	t.Helper()
	res := httpOpen(t, context.Background(), "POST", url+"/chat", "", map[string]string{"sessionId": id, "text": "go"}, "text/event-stream")
	t.Cleanup(func() { res.Body.Close() })
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before any text: %v", err)
		}
		if strings.HasPrefix(line, "event: text") {
			return br
		}
	}
}

// readTranscript opens the store the process used and reads a session.
func readTranscript(t *testing.T, url, id string) []transcript.Entry {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	entries, err := st.Read(context.Background(), store.Key{Agent: "default", ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func endStatuses(entries []transcript.Entry) []transcript.Status {
	var out []transcript.Status
	for _, e := range entries {
		if e.Type == transcript.TypeTurnEnd {
			out = append(out, e.Status)
		}
	}
	return out
}

// SIGTERM with a turn running: within the grace period the turn finishes
// and its client gets the whole answer; past it the turn is cancelled and
// recorded so. Either way the process exits 0 and the transcript is
// complete.
func TestServeGracefulShutdown(t *testing.T) {
	cases := []struct {
		name  string
		grace string
		words int
		want  transcript.Status
	}{
		{"finishes within grace", "20s", 8, transcript.StatusOK},
		{"cancelled after grace", "200ms", 400, transcript.StatusCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prov := slowProvider(t, c.words, 50*time.Millisecond)
			db := "sqlite:" + filepath.Join(t.TempDir(), "spool.db")
			p := startServe(t, "--store", db, "--grace", c.grace, "--model", "openai:slow", "--base-url", prov.URL+"/v1", "--model-key", "test")
			br := chatUntilText(t, p.URL, "slow")
			p.Cmd.Process.Signal(syscall.SIGTERM)
			rest, _ := io.ReadAll(br)
			if code := p.Wait(t, 20*time.Second); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if c.want == transcript.StatusOK && !strings.Contains(string(rest), "event: turn_end") {
				t.Fatalf("the client did not get the end of the turn:\n%s", rest)
			}
			entries := readTranscript(t, db, "slow")
			if got := endStatuses(entries); len(got) != 1 || got[0] != c.want {
				t.Fatalf("turn ends %v, want [%s]", got, c.want)
			}
		})
	}
}

// A second SIGTERM (or Ctrl-C) during the grace period ends the process
// at once: someone who will not wait for the turns; the transcript holds
// the turn unfinished, for the session's next turn to close.
func TestServeSecondSignalExitsAtOnce(t *testing.T) {
	prov := slowProvider(t, 400, 50*time.Millisecond)
	db := "sqlite:" + filepath.Join(t.TempDir(), "spool.db")
	p := startServe(t, "--store", db, "--grace", "60s", "--model", "openai:slow", "--base-url", prov.URL+"/v1", "--model-key", "test")
	br := chatUntilText(t, p.URL, "slow")
	p.Cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Stderr.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown after SIGTERM:\n%s", p.Stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 10*time.Second); code == 0 {
		t.Fatal("the process exited 0 after a second signal: it waited for the turn")
	}
	io.Copy(io.Discard, br)
	if got := endStatuses(readTranscript(t, db, "slow")); len(got) != 0 {
		t.Fatalf("turn ends %v: the turn ran to an end", got)
	}
}

func TestServeRefusals(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "keys.json")
	os.WriteFile(open, []byte(`{"keys":[{"key":"`+e2eKey+`","project":true}]}`), 0o644)
	os.Chmod(open, 0o644)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, 2, "without keys"},
		{[]string{"--addr", ":0"}, 2, "without keys"},
		{[]string{"--keys", open}, 1, "readable or writable by other users"},
		{[]string{"--api-key", "short"}, 2, "shorter than"},
		{[]string{"--user", "bob"}, 2, "--user"},
		{[]string{"--scope", "team"}, 2, "--scope"},
		{[]string{"--mode", "yolo"}, 2, "--mode"},
		{[]string{"--on-disconnect", "pause"}, 2, "--on-disconnect must be continue or cancel"},
		{[]string{"--max-queue", "0"}, 2, "--max-queue"},
		{[]string{"--addr", "nonsense"}, 2, "--addr"},
	}
	for _, c := range cases {
		code, _, stderr := newCLI(t, nil).run("", append([]string{"serve", "--store", "memory:"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Fatalf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

// A key that the keys file gives a user and --api-key gives again as the
// project key is refused: a request is authenticated as the last entry
// its key matches, so the user's key would have had project access and
// acted for any user through X-Spool-User. The file may hold the user's
// key as its digest, so the operator cannot see that the two are one.
func TestServeKeyGivenTwiceRefused(t *testing.T) {
	sum := sha256.Sum256([]byte(e2eKey))
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"alice","sha256":"`+hex.EncodeToString(sum[:])+`","user":"alice"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := &environ{stderr: io.Discard, getenv: func(string) string { return "" }}
	if k, err := (&serveFlags{keysFile: keys, apiKey: e2eKey}).loadKeys(env); err == nil || !strings.Contains(err.Error(), `"api-key" is also key "alice"`) {
		t.Fatalf("the user's key as --api-key too: %d keys, error %v", k.Len(), err)
	}
	k, err := (&serveFlags{keysFile: keys, apiKey: e2eKey + "-other"}).loadKeys(env)
	if err != nil || k.Len() != 2 {
		t.Fatalf("another --api-key: %d keys, error %v", k.Len(), err)
	}
}

// spool bench drives a running server and reports rates and percentiles.
func TestBench(t *testing.T) {
	p := startServe(t, "--store", "memory:", "--api-key", e2eKey)
	for _, mode := range []string{"invoke", "chat"} {
		code, out, stderr := newCLI(t, nil).run("", "bench", mode, "--url", p.URL, "--key", e2eKey, "--duration", "300ms", "--concurrency", "4", "--sessions", "2")
		if code != 0 || !strings.Contains(out, "rps: ") || !strings.Contains(out, "p99") {
			t.Fatalf("bench %s: exit %d\n%s\n%s", mode, code, out, stderr)
		}
	}
	code, _, stderr := newCLI(t, nil).run("", "bench", "invoke", "--url", p.URL, "--duration", "200ms")
	if code != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("bench without the key: exit %d %s", code, stderr)
	}
}

// bench never touches sessions it did not make: on its own server its
// sessions are another agent's, and it deletes them when done; a server
// that holds other sessions is refused.
func TestBenchLeavesOtherSessions(t *testing.T) {
	url := "file:" + t.TempDir()
	c := newCLI(t, nil)
	chatSessions(t, c, url, chatScript{"mine", []string{"keep me"}})
	code, out, errs := c.run("", "bench", "invoke", "--store", url, "--sessions", "60", "--concurrency", "8", "--duration", "500ms")
	if code != 0 || !strings.Contains(out, " 0 errors") {
		t.Fatalf("bench on its own server: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := c.run("", "sessions", "show", "mine", "--store", url); code != 0 || !strings.Contains(out, "keep me") {
		t.Fatalf("bench deleted a session it did not make: %d %s", code, out)
	}
	if code, out, errs := c.run("", "sessions", "ls", "--store", url, "--agent", benchAgent); code != 0 || out != "" {
		t.Fatalf("bench left its sessions behind: %d %q %q", code, out, errs)
	}

	p := startServe(t, "--store", url, "--api-key", e2eKey)
	code, _, errs = c.run("", "bench", "invoke", "--url", p.URL, "--key", e2eKey, "--duration", "200ms")
	if code != 1 || !strings.Contains(errs, "holds sessions bench did not make") || !strings.Contains(errs, "--allow-existing") {
		t.Fatalf("bench against a server with other sessions: exit %d %q", code, errs)
	}
}

// Every answer the server gives is counted, those that arrive after the
// time is up included: 5xx answers are errors in the report.
func TestBenchCountsServerErrors(t *testing.T) {
	var mu sync.Mutex
	served := map[int]int{}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/sessions" {
			io.WriteString(w, `{"sessions":[]}`)
			return
		}
		time.Sleep(30 * time.Millisecond) // answers arrive across the deadline
		mu.Lock()
		n := served[http.StatusOK] + served[http.StatusServiceUnavailable]
		code := http.StatusOK
		if n%4 == 3 {
			code = http.StatusServiceUnavailable
		}
		served[code]++
		mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, `{"text":"ok"}`)
	}))
	defer fake.Close()
	code, out, _ := newCLI(t, nil).run("", "bench", "invoke", "--url", fake.URL, "--duration", "300ms", "--concurrency", "4")
	mu.Lock()
	want := served[http.StatusServiceUnavailable]
	total := served[http.StatusOK] + want
	mu.Unlock()
	if want == 0 {
		t.Fatal("the fake server answered no 503")
	}
	if code != 1 || !strings.Contains(out, fmt.Sprintf("%d requests in", total)) || !strings.Contains(out, fmt.Sprintf("%d errors (503 ×%d)", want, want)) {
		t.Fatalf("the server answered %d requests, %d of them 503; bench said (exit %d):\n%s", total, want, code, out)
	}
}

// spool serve --read-timeout cuts a body that trickles in, and the
// connection is not held.
func TestServeReadTimeout(t *testing.T) {
	p := startServe(t, "--store", "memory:", "--read-timeout", "300ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	go func() {
		for range 100 {
			time.Sleep(50 * time.Millisecond)
			if _, err := io.WriteString(conn, " "); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if res.StatusCode != http.StatusRequestTimeout || time.Since(start) > 3*time.Second {
		t.Fatalf("status %d after %s; want 408 soon after 300ms", res.StatusCode, time.Since(start))
	}
}
