package server_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

func TestRequestIDs(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	r := e.get("/v1/sessions", "X-Request-Id", "client-id.42")
	if r.header.Get("X-Request-Id") != "client-id.42" {
		t.Fatalf("sane id not kept: %q", r.header.Get("X-Request-Id"))
	}
	r = e.get("/v1/sessions", "X-Request-Id", "bad id with spaces and more")
	got := r.header.Get("X-Request-Id")
	if !regexp.MustCompile(`^[0-9a-f]{24}$`).MatchString(got) {
		t.Fatalf("insane id replaced by %q", got)
	}
	r = e.get("/v1/sessions")
	if r.header.Get("X-Request-Id") == "" || r.header.Get("X-Request-Id") == got {
		t.Fatalf("no fresh id: %q", r.header.Get("X-Request-Id"))
	}
	// Every line about a request carries its id: the access line and the
	// runtime's own, which logs through server.LogHandler.
	e.post("/invoke", map[string]any{"prompt": "hi"}, "X-Request-Id", "turn-req-1")
	var lines int
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "turn-req-1") {
			lines++
		}
	}
	if lines < 2 {
		t.Fatalf("request id in %d lines, want the access line and the turn's:\n%s", lines, e.logs.String())
	}
}

// Content never reaches the log: not on success, not in errors, not in
// the tool calls' arguments, not in bodies that are refused.
func TestNoContentInLogs(t *testing.T) {
	const secret = "hunter2-SECRET-7f3a"
	e := newEnv(t, spool.Config{}, server.Options{MaxBodyBytes: 4096})
	e.post("/invoke", map[string]any{"prompt": "the password is " + secret, "sessionId": "s"})
	e.post("/chat", map[string]any{"text": "again " + secret, "sessionId": "s"})
	e.stream("/chat", map[string]any{"text": "stream " + secret, "sessionId": "s"})
	e.post("/invoke", `{"prompt":"`+secret+`"`)                             // malformed
	e.post("/invoke", `{"prompt":"`+secret+`","`+secret+`":1}`)             // unknown field named by the secret
	e.post("/invoke", `{"prompt":"`+secret+strings.Repeat("x", 5000)+`"}`)  // too large
	e.post("/invoke", `{"prompt":"`+secret+`","sessionId":"`+secret+`/x"}`) // invalid id
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"` + secret + `"}`, "sessionId": "t"}).json(t, &res)
	e.post("/v1/sessions/t/approvals/"+res.Pending[0].ID, map[string]any{"decision": "deny", "reason": secret})
	e.post("/api/chat", map[string]any{"id": "ai", "messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": secret}}}}})
	e.post("/invoke", map[string]any{"prompt": "x"}, "X-Request-Id", secret)
	logs := e.logs.String()
	if !strings.Contains(logs, "request") {
		t.Fatalf("nothing logged:\n%s", logs)
	}
	// The request id is the client's to choose and is logged; every other
	// appearance would be content.
	logs = strings.ReplaceAll(logs, "requestId="+secret, "")
	if strings.Contains(logs, secret) {
		t.Fatalf("the secret is in the log:\n%s", logs)
	}
}
