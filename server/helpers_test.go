package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/apicontract"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// env is a server under test on a loopback listener.
type env struct {
	t     *testing.T
	agent *spool.Agent
	srv   *server.Server
	http  *httptest.Server
	logs  *syncBuffer
	key   string // sent as the bearer key when set
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// noteTool requires approval and returns "saved: <text>".
func noteTool() *tool.Tool {
	type args struct {
		Text string `json:"text"`
	}
	return tool.New("save_note", "Save a note.", func(ctx context.Context, a args) (string, error) {
		return "saved: " + a.Text, nil
	}, tool.RequireApproval())
}

func clockTool() *tool.Tool {
	return tool.New("get_time", "Tell the time.", func(ctx context.Context, _ struct{}) (string, error) {
		return "noon", nil
	})
}

// newEnv starts a server for an agent configured by cfg (echo model,
// memstore and the two test tools by default).
func newEnv(t *testing.T, cfg spool.Config, opts server.Options) *env {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = echo.New()
	}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.Tools == nil {
		cfg.Tools = []*tool.Tool{noteTool(), clockTool()}
	}
	logs := &syncBuffer{}
	log := slog.New(server.LogHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	if opts.Logger == nil {
		opts.Logger = log
	}
	a, err := spool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(a, opts)
	// Every response is checked against the OpenAPI document when the
	// test ends.
	hs := httptest.NewServer(apicontract.Record(t, s))
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return &env{t: t, agent: a, srv: s, http: hs, logs: logs}
}

// req is one request of a test.
type req struct {
	method, path string
	body         any // string as is; anything else as JSON
	header       map[string]string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %d %q is not JSON: %v", r.status, r.body, err)
	}
}

// errCode returns the code of a JSON error response, failing the test if
// the body is not one, or if its retryAfter is not the Retry-After
// header's number of seconds (both absent, or both the same).
func (r resp) errCode(t *testing.T) string {
	t.Helper()
	e := r.apiErr(t)
	header := r.header.Get("Retry-After")
	if e.RetryAfter != nil && (*e.RetryAfter <= 0 || header != strconv.Itoa(*e.RetryAfter)) || e.RetryAfter == nil && header != "" {
		t.Fatalf("response %d with Retry-After %q: %s", r.status, header, r.body)
	}
	return e.Code
}

// errBody is the "error" object of a JSON error response, its optional
// fields nil when absent.
type errBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter *int   `json:"retryAfter"`
	MaxBytes   *int64 `json:"maxBytes"`
	Stopping   bool   `json:"stopping"`
}

// apiErr returns the error of a JSON error response, failing the test if
// the body is not one.
func (r resp) apiErr(t *testing.T) errBody {
	t.Helper()
	var e struct {
		Error *errBody `json:"error"`
	}
	r.json(t, &e)
	if e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("response %d %s is not a JSON error", r.status, r.body)
	}
	return *e.Error
}

// retryAfter returns the seconds an error response asks to wait, failing
// the test if it asks none, or its body and Retry-After disagree.
func (r resp) retryAfter(t *testing.T) int {
	t.Helper()
	r.errCode(t)
	e := r.apiErr(t)
	if e.RetryAfter == nil {
		t.Fatalf("response %d without retryAfter: %s", r.status, r.body)
	}
	return *e.RetryAfter
}

func (e *env) newRequest(ctx context.Context, rq req) *http.Request {
	e.t.Helper()
	var body io.Reader
	switch b := rq.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		body = bytes.NewReader(j)
	}
	hr, err := http.NewRequestWithContext(ctx, rq.method, e.http.URL+rq.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if e.key != "" {
		hr.Header.Set("Authorization", "Bearer "+e.key)
	}
	for k, v := range rq.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		if v == "" {
			hr.Header.Del(k)
		} else {
			hr.Header.Set(k, v)
		}
	}
	return hr
}

func (e *env) do(rq req) resp {
	e.t.Helper()
	res, err := e.http.Client().Do(e.newRequest(context.Background(), rq))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// post is a JSON POST.
func (e *env) post(path string, body any, header ...string) resp {
	e.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return e.do(req{method: "POST", path: path, body: body, header: h})
}

func (e *env) get(path string, header ...string) resp {
	e.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return e.do(req{method: "GET", path: path, header: h})
}

// sseEvent is one event of a stream; comments are collected apart.
type sseEvent struct {
	name string
	id   string
	data string
}

// readSSE parses a whole event stream.
func readSSE(t *testing.T, r io.Reader) (events []sseEvent, comments int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || data != nil {
				cur.data = strings.Join(data, "\n")
				events = append(events, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "retry: "):
			// The reconnection hint, which opens every stream.
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("not an SSE line: %q", line)
		}
	}
	return events, comments
}

// stream posts body with Accept: text/event-stream and parses the stream.
func (e *env) stream(path string, body any, header ...string) (resp, []sseEvent, int) {
	e.t.Helper()
	h := map[string]string{"Accept": "text/event-stream"}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	res, err := e.http.Client().Do(e.newRequest(context.Background(), req{method: "POST", path: path, body: body, header: h}))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	r := resp{status: res.StatusCode, header: res.Header}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		r.body, _ = io.ReadAll(res.Body)
		return r, nil, 0
	}
	events, comments := readSSE(e.t, res.Body)
	return r, events, comments
}

func names(events []sseEvent) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.name
	}
	return out
}

// transcriptOf reads a session's entries straight from the store.
func (e *env) transcriptOf(owner, id string) []transcript.Entry {
	e.t.Helper()
	k := e.agent.Store()
	entries, err := k.Read(context.Background(), keyOf(e.agent, owner, id))
	if err != nil {
		e.t.Fatal(err)
	}
	return entries
}

// waitEnded waits until the session's newest entry is a turn end, and
// returns the transcript.
func (e *env) waitEnded(owner, id string) []transcript.Entry {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries := e.transcriptOf(owner, id)
		if n := len(entries); n > 0 && entries[n-1].Type == transcript.TypeTurnEnd {
			return entries
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("session %s: no turn end after 10s (%d entries)", id, len(entries))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkWellFormed checks that a transcript is one chain whose turns never
// interleave, each starting with its user message and ending once.
func checkWellFormed(t *testing.T, entries []transcript.Entry) {
	t.Helper()
	seen := map[string]bool{}
	ended := map[string]bool{}
	prev := ""
	for i, e := range entries {
		want := ""
		if i > 0 {
			want = entries[i-1].ID
		}
		if e.ParentID != want {
			t.Fatalf("entry %d: parent %q, want %q: not a chain", i, e.ParentID, want)
		}
		if e.TurnID != prev {
			if seen[e.TurnID] {
				t.Fatalf("entry %d: turn %s resumes after another turn", i, e.TurnID)
			}
			if e.Type != transcript.TypeUserMessage {
				t.Fatalf("entry %d: turn %s starts with %s", i, e.TurnID, e.Type)
			}
			seen[e.TurnID] = true
			prev = e.TurnID
		}
		if ended[e.TurnID] {
			t.Fatalf("entry %d: %s after the end of turn %s", i, e.Type, e.TurnID)
		}
		if e.Type == transcript.TypeTurnEnd {
			ended[e.TurnID] = true
		}
	}
}

// userTexts returns the texts of a transcript's user messages, in order.
func userTexts(t *testing.T, entries []transcript.Entry) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		if e.Type == transcript.TypeUserMessage {
			var m transcript.UserMessage
			if err := e.DecodeData(&m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m.Text)
		}
	}
	return out
}

// turnEnds returns the statuses of a transcript's turn ends, in order.
func turnEnds(entries []transcript.Entry) []transcript.Status {
	var out []transcript.Status
	for _, e := range entries {
		if e.Type == transcript.TypeTurnEnd {
			out = append(out, e.Status)
		}
	}
	return out
}

func keyOf(a *spool.Agent, owner, id string) store.Key {
	return store.Key{Agent: a.Name(), Owner: owner, ID: id}
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// readmeFrom returns the path of curl and the README's text from the
// first occurrence of start up to the next end (what a person copies to
// paste into a shell); the test skips without curl and fails when the
// README no longer has start.
func readmeFrom(t *testing.T, start, end string) (curl, text string) {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not found")
	}
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), start)
	if at < 0 {
		t.Fatalf("README.md has no line %q…", start)
	}
	text = string(b[at:])
	if n := strings.Index(text, end); n >= 0 {
		text = text[:n]
	}
	return curl, text
}
