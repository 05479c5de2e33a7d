package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// accessLines returns the access log lines of a JSON log, decoded.
func accessLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// One line per request, naming the route pattern, never the raw path (it
// holds session ids), the query, the key or the body; the user acted for
// on a user-scoped agent; health probes at debug level only.
func TestAccessLog(t *testing.T) {
	var buf syncBuffer
	log := slog.New(server.LogHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	keys, err := server.NewAPIKeys(
		server.APIKey{Name: "alice-laptop", Key: "alice-key-0123456789abc", User: "alice"},
		server.APIKey{Name: "backend", Key: "backend-key-0123456789ab", Project: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser, Logger: log}, server.Options{Keys: keys, Logger: log})

	e.key = "alice-key-0123456789abc"
	e.post("/invoke", map[string]any{"prompt": "private words", "sessionId": "sess-4417"}, "X-Request-Id", "req-a")
	e.get("/v1/sessions/sess-4417/messages?limit=5&cursor=zzz", "X-Request-Id", "req-b")
	e.key = "backend-key-0123456789ab"
	e.get("/v1/sessions/sess-9", server.UserHeader, "bob", "X-Request-Id", "req-c")
	e.key = ""
	e.get("/v1/sessions/sess-4417", "X-Request-Id", "req-d") // 401
	e.get("/healthz", "X-Request-Id", "req-e")
	e.get("/no/such/sess-4417", "X-Request-Id", "req-f")

	want := map[string]map[string]any{
		"req-a": {"method": "POST", "route": "/invoke", "status": 200.0, "key": "alice-laptop", "user": "alice"},
		"req-b": {"method": "GET", "route": "/v1/sessions/{id}/messages", "status": 400.0, "key": "alice-laptop", "user": "alice"},
		"req-c": {"method": "GET", "route": "/v1/sessions/{id}", "status": 404.0, "key": "backend", "user": "bob"},
		"req-d": {"method": "GET", "route": "/v1/sessions/{id}", "status": 401.0},
		"req-f": {"method": "GET", "route": "/", "status": 401.0},
	}
	lines := accessLines(t, buf.String())
	got := map[string]map[string]any{}
	for _, l := range lines {
		got[l["requestId"].(string)] = l
	}
	if len(lines) != len(want) {
		t.Fatalf("%d access lines, want %d (the probe at debug level only):\n%s", len(lines), len(want), buf.String())
	}
	for id, fields := range want {
		l, ok := got[id]
		if !ok {
			t.Fatalf("no access line for %s:\n%s", id, buf.String())
		}
		for k, v := range fields {
			if l[k] != v {
				t.Errorf("%s: %s = %v, want %v", id, k, l[k], v)
			}
		}
		if _, ok := l["duration"]; !ok {
			t.Errorf("%s: no duration", id)
		}
		if _, ok := l["bytes"]; !ok {
			t.Errorf("%s: no bytes", id)
		}
		if _, ok := fields["user"]; !ok && l["user"] != nil {
			t.Errorf("%s: user %v", id, l["user"])
		}
	}
	for _, l := range lines {
		b, _ := json.Marshal(l)
		for _, leak := range []string{"sess-4417", "sess-9", "cursor", "zzz", "/no/such"} {
			if bytes.Contains(b, []byte(leak)) {
				t.Errorf("an access line holds %q: %s", leak, b)
			}
		}
	}
	for _, leak := range []string{"private words", "0123456789"} {
		if strings.Contains(buf.String(), leak) {
			t.Errorf("the log holds %q:\n%s", leak, buf.String())
		}
	}
}
