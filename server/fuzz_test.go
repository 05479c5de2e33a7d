package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
)

// fuzzRoutes are the routes that read a JSON body, with the headers a
// client of each sends.
var fuzzRoutes = []struct {
	path   string
	header map[string]string
}{
	{"/invoke", nil},
	{"/chat", nil},
	{"/chat", map[string]string{"Accept": "text/event-stream"}},
	{"/v1/sessions/s/approvals/apr_1", nil},
	{"/api/chat", nil},
	{"/mcp", map[string]string{"Accept": "application/json, text/event-stream"}},
}

// fuzzServer is a keyless server on a memstore, with a session "s" whose
// turn waits on an approval, so that decision bodies reach the runtime.
func fuzzServer(t testing.TB) (http.Handler, *syncBuffer, string) {
	logs := &syncBuffer{}
	log := slog.New(server.LogHandler(slog.NewTextHandler(logs, nil)))
	a, err := spool.New(spool.Config{Store: memstore.New(), Model: echo.New(), Tools: []*tool.Tool{noteTool(), clockTool()}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.Session(t.Context(), "s")
	res, err := s.Send(t.Context(), `/call save_note {"text":"x"}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("no pending approval to decide: %+v, %v", res, err)
	}
	h := server.New(a, server.Options{Logger: log, MaxBodyBytes: 64 << 10})
	t.Cleanup(func() { h.Close() })
	return h, logs, res.Pending[0].ID
}

// FuzzJSONBodies posts arbitrary bytes as the JSON body of every route that
// takes one: the server never panics and never answers 5xx; an error is a
// 4xx with a JSON body ({"error":{…}}, or a JSON-RPC error from /mcp); a
// success is JSON or an event stream.
func FuzzJSONBodies(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"hi"}`, `{"prompt":"hi","sessionId":"x"}`, `{"text":"hi"}`, `{"sessionId":"../x","text":"hi"}`,
		`{"decision":"allow"}`, `{"decision":"deny","scope":"session","reason":"no"}`,
		`{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`,
		`{"id":"c1","messages":[{"id":"m2","role":"assistant","parts":[{"type":"tool-save_note","toolCallId":"call_1","state":"approval-responded","approval":{"id":"apr_1","approved":true}}]}]}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"prompt":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`[]`, `null`, `{}`, `{"prompt":1}`, `{"prompt":"a"} {}`, "\x00", "",
		strings.Repeat("[", 10001), `{"prompt":"` + strings.Repeat("\\u0000", 100) + `"}`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), []byte(seed))
		}
	}
	h, logs, approval := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.Replace(rt.path, "apr_1", approval, 1)
		r := httptest.NewRequest("POST", path, bytes.NewReader(body))
		r.Host = "127.0.0.1"
		r.Header.Set("Content-Type", "application/json")
		for k, v := range rt.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		checkAnswer(t, path, w, body)
		if strings.Contains(logs.String(), "panicked") {
			t.Fatalf("%s: the handler panicked:\n%s", path, logs.String())
		}
	})
}

func checkAnswer(t *testing.T, path string, w *httptest.ResponseRecorder, body []byte) {
	t.Helper()
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	ct := res.Header.Get("Content-Type")
	switch {
	case res.StatusCode >= 500:
		t.Fatalf("%s with %.80q: %d %s", path, body, res.StatusCode, b)
	case res.StatusCode >= 400 && path == "/mcp" && strings.HasPrefix(ct, "text/plain") && len(b) > 0:
		// The MCP SDK answers a malformed JSON-RPC message itself, with a
		// plain-text 400 ("malformed payload: …"), not the server's JSON
		// error: a known departure from the package doc's "every error is
		// JSON", reported; still a 4xx, never a panic or a 5xx.
	case res.StatusCode >= 400:
		if !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s with %.80q: %d with Content-Type %q: %s", path, body, res.StatusCode, ct, b)
		}
		var e struct {
			Error *struct {
				Code    any    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || e.Error.Message == "" {
			t.Fatalf("%s with %.80q: %d, not a JSON error: %s", path, body, res.StatusCode, b)
		}
	case strings.HasPrefix(ct, "text/event-stream"):
	case strings.HasPrefix(ct, "application/json"):
		if len(bytes.TrimSpace(b)) > 0 && !json.Valid(b) {
			t.Fatalf("%s with %.80q: %d, invalid JSON: %s", path, body, res.StatusCode, b)
		}
	case res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusNoContent:
		// /mcp answers a notification with 202 and no body.
	default:
		t.Fatalf("%s with %.80q: %d with Content-Type %q: %.200s", path, body, res.StatusCode, ct, b)
	}
}

// queryRoutes are the GET routes that read query parameters (and, for the
// events, the Last-Event-ID header).
var queryRoutes = []string{"/v1/sessions", "/v1/sessions/s/messages", "/v1/sessions/s/events", "/v1/search"}

// FuzzQueryParams gives the GET routes arbitrary query strings and
// Last-Event-ID headers (limit, order, cursor, branches, after, follow, q,
// session): the server never panics and never answers 5xx, an error is a
// 4xx JSON error, and a page never holds more than the limit asked for.
func FuzzQueryParams(f *testing.F) {
	for _, seed := range []struct{ query, lastID string }{
		{"limit=1", ""}, {"limit=0", ""}, {"limit=-1", ""}, {"limit=1e3", ""}, {"limit=99999999999999999999", ""},
		{"order=asc&limit=2", ""}, {"order=sideways", ""}, {"branches=all", ""}, {"branches=none", ""},
		{"cursor=AQAAAAAAAAAA__________", ""}, {"cursor=%zz", ""}, {"limit=1&limit=2", ""},
		{"after=0.0", ""}, {"after=1.2", "0.0"}, {"", "9223372036854775807.1"}, {"", "-1.0"}, {"after=x", "garbage"},
		{"follow=1", ""}, {"follow=maybe", ""}, {"q=hi", ""}, {"q=+&session=s", ""}, {"q=hi&session=../x&limit=3", ""},
		{";&&==", "\x00"},
	} {
		for i := range queryRoutes {
			f.Add(uint8(i), seed.query, seed.lastID)
		}
	}
	h, logs, _ := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, query, lastID string) {
		path := queryRoutes[int(route)%len(queryRoutes)]
		r := httptest.NewRequest("GET", path, nil)
		r.URL.RawQuery = query
		r.Host = "127.0.0.1"
		if lastID != "" {
			r.Header.Set("Last-Event-ID", lastID)
		}
		if r.URL.Query().Has("follow") {
			// A followed stream stays open for the next turns: end it soon.
			ctx, cancel := context.WithTimeout(r.Context(), 20*time.Millisecond)
			defer cancel()
			r = r.WithContext(ctx)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		checkAnswer(t, path+"?"+query, w, []byte(lastID))
		if strings.Contains(logs.String(), "panicked") {
			t.Fatalf("%s?%s: the handler panicked:\n%s", path, query, logs.String())
		}
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		if w.Code != http.StatusOK || err != nil || limit < 1 {
			return
		}
		var page struct {
			Sessions, Messages, Hits []json.RawMessage
		}
		json.Unmarshal(w.Body.Bytes(), &page)
		if n := len(page.Sessions) + len(page.Messages) + len(page.Hits); n > limit {
			t.Fatalf("%s?%s: %d items, over the limit %d", path, query, n, limit)
		}
	})
}
