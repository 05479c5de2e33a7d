package server_test

import (
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// isolationEnv is a user-scoped agent with keys for alice, bob and a
// project backend. Alice has session "two" with an ended turn and a
// second turn waiting on an approval; bob has session "mine". It returns
// alice's turn ids and her pending approval's id.
func isolationEnv(t *testing.T) (e *env, turns []string, approval string) {
	t.Helper()
	e = newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	e.key = aliceKey
	if r := e.post("/invoke", map[string]any{"prompt": "alice's secret", "sessionId": "two"}); r.status != 200 {
		t.Fatalf("seed: %d %s", r.status, r.body)
	}
	r := e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"secret"}`, "sessionId": "two"})
	var res spool.Result
	r.json(t, &res)
	if r.status != 200 || len(res.Pending) != 1 {
		t.Fatalf("seed approval: %d %s", r.status, r.body)
	}
	for _, en := range e.transcriptOf("alice", "two") {
		if en.TurnID != "" && (len(turns) == 0 || turns[len(turns)-1] != en.TurnID) {
			turns = append(turns, en.TurnID)
		}
	}
	e.key = bobKey
	if r := e.post("/invoke", map[string]any{"prompt": "bob's own", "sessionId": "mine"}); r.status != 200 {
		t.Fatalf("seed bob: %d %s", r.status, r.body)
	}
	e.key = ""
	return e, turns, res.Pending[0].ID
}

// TestNoExistenceOracle: every route that names a session answers bob
// for alice's session exactly as for a session nobody has (status, code
// and message), so that bob cannot learn which ids alice uses; and a turn
// or approval of alice's named on bob's own session is as unknown as one
// nobody has.
func TestNoExistenceOracle(t *testing.T) {
	e, turns, approval := isolationEnv(t)
	bob := map[string]string{"Authorization": "Bearer " + bobKey}
	sse := map[string]string{"Authorization": "Bearer " + bobKey, "Accept": "text/event-stream"}
	resume := map[string]string{"Authorization": "Bearer " + bobKey, "Last-Event-ID": "1.1"}
	routes := func(id, turn, apr string) []req {
		p := "/v1/sessions/" + id
		return []req{
			{method: "GET", path: p},
			{method: "DELETE", path: p},
			{method: "PATCH", path: p, body: map[string]any{"title": "mine now"}},
			{method: "GET", path: p + "/messages"},
			{method: "GET", path: p + "/messages?order=desc&limit=1&branches=all"},
			{method: "GET", path: p + "/history"},
			{method: "GET", path: p + "/approvals"},
			{method: "POST", path: p + "/approvals/" + apr, body: map[string]any{"decision": "allow"}},
			{method: "POST", path: p + "/approvals/" + apr, body: map[string]any{"decision": "deny"}, header: sse},
			{method: "POST", path: p + "/regenerate"},
			{method: "POST", path: p + "/regenerate", header: sse},
			{method: "POST", path: p + "/turns/" + turn + "/edit", body: map[string]any{"text": "x"}},
			{method: "POST", path: p + "/turns/" + turn + "/switch"},
			{method: "POST", path: p + "/fork", body: map[string]any{"atTurn": turn}},
			{method: "POST", path: p + "/fork", body: map[string]any{"atTurn": turn, "sessionId": "stolen"}},
			{method: "POST", path: p + "/stop"},
			{method: "POST", path: p + "/compact"},
			{method: "GET", path: p + "/events"},
			{method: "GET", path: p + "/events?after=1.1"},
			{method: "GET", path: p + "/events", header: resume},
			{method: "GET", path: p + "/events?follow=1&after=99.1"},
			{method: "GET", path: "/api/chat/" + id},
			{method: "GET", path: "/api/chat/" + id + "/stream"},
			{method: "GET", path: "/v1/search?q=secret&session=" + id},
		}
	}
	theirs := routes("two", turns[0], approval)
	nobodys := routes("nobody-has-this", "01JNOSUCHTURN0000000000000", "apr_nosuch")
	for i := range theirs {
		a, b := theirs[i], nobodys[i]
		if a.header == nil {
			a.header, b.header = bob, bob
		}
		ra, rb := e.do(a), e.do(b)
		if ra.status != rb.status || string(ra.body) != string(rb.body) {
			t.Errorf("%s %s: alice's session answers %d %s; nobody's %d %s", a.method, a.path, ra.status, ra.body, rb.status, rb.body)
		}
		if strings.Contains(string(ra.body), "secret") {
			t.Errorf("%s %s: alice's content in %s", a.method, a.path, ra.body)
		}
	}
	// Alice's turn and approval ids on bob's own session.
	mine := routes("mine", turns[0], approval)
	unknown := routes("mine", "01JNOSUCHTURN0000000000000", "apr_nosuch")
	for i := range mine {
		a, b := mine[i], unknown[i]
		if !strings.Contains(a.path, turns[0]) && !strings.Contains(a.path, approval) && !strings.Contains(a.path, "fork") {
			continue
		}
		if a.header == nil {
			a.header, b.header = bob, bob
		}
		ra, rb := e.do(a), e.do(b)
		if ra.status != rb.status || string(ra.body) != string(rb.body) {
			t.Errorf("%s %s on bob's session: alice's id answers %d %s; an unknown one %d %s", a.method, a.path, ra.status, ra.body, rb.status, rb.body)
		}
	}
	// Alice's session is untouched.
	e.key = aliceKey
	var aps struct{ Approvals []spool.Approval }
	e.get("/v1/sessions/two/approvals").json(t, &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].ID != approval {
		t.Fatalf("alice's approvals: %+v", aps)
	}
	var info struct{ Title string }
	e.get("/v1/sessions/two").json(t, &info)
	if info.Title == "mine now" {
		t.Fatal("bob renamed alice's session")
	}
}

// TestUserHeaderOnEveryRoute: a user key naming another user in
// X-Spool-User, and a project key naming none, are refused on every
// route that reaches sessions, before anything is read or run; the same
// key naming its own user (in any spacing) acts as itself.
func TestUserHeaderOnEveryRoute(t *testing.T) {
	e, turns, approval := isolationEnv(t)
	msg := []any{map[string]any{"id": "m", "role": "user", "parts": []any{map[string]string{"type": "text", "text": "hi"}}}}
	p := "/v1/sessions/two"
	routes := []req{
		{method: "POST", path: "/invoke", body: map[string]any{"prompt": "hi", "sessionId": "two"}},
		{method: "POST", path: "/chat", body: map[string]any{"text": "hi", "sessionId": "two"}},
		{method: "POST", path: "/api/chat", body: map[string]any{"id": "two", "messages": msg}},
		{method: "GET", path: "/api/chat/two"},
		{method: "GET", path: "/api/chat/two/stream"},
		{method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"prompt":"hi","sessionId":"two"}}}`},
		{method: "GET", path: "/v1/sessions"},
		{method: "GET", path: "/v1/search?q=secret"},
		{method: "GET", path: p},
		{method: "DELETE", path: p},
		{method: "PATCH", path: p, body: map[string]any{"title": "x"}},
		{method: "GET", path: p + "/messages"},
		{method: "GET", path: p + "/history"},
		{method: "GET", path: p + "/approvals"},
		{method: "POST", path: p + "/approvals/" + approval, body: map[string]any{"decision": "allow"}},
		{method: "POST", path: p + "/regenerate"},
		{method: "POST", path: p + "/turns/" + turns[0] + "/edit", body: map[string]any{"text": "x"}},
		{method: "POST", path: p + "/turns/" + turns[0] + "/switch"},
		{method: "POST", path: p + "/fork", body: map[string]any{"atTurn": turns[0]}},
		{method: "POST", path: p + "/stop"},
		{method: "POST", path: p + "/compact"},
		{method: "GET", path: p + "/events"},
	}
	before := len(e.transcriptOf("alice", "two"))
	for _, c := range []struct {
		name   string
		header map[string]string
		status int
		code   string
	}{
		{"bob as alice", map[string]string{"Authorization": "Bearer " + bobKey, server.UserHeader: "alice"}, 403, server.CodeForbidden},
		{"bob as ALICE", map[string]string{"Authorization": "Bearer " + bobKey, server.UserHeader: "ALICE"}, 403, server.CodeForbidden},
		{"project key, no user", map[string]string{"Authorization": "Bearer " + projectKey}, 403, server.CodeUserRequired},
		{"project key, blank user", map[string]string{"Authorization": "Bearer " + projectKey, server.UserHeader: "  "}, 403, server.CodeUserRequired},
		{"project key, alice/..", map[string]string{"Authorization": "Bearer " + projectKey, server.UserHeader: "alice/.."}, 400, server.CodeBadRequest},
		{"project key, ..", map[string]string{"Authorization": "Bearer " + projectKey, server.UserHeader: ".."}, 400, server.CodeBadRequest},
	} {
		for _, rq := range routes {
			rq.header = map[string]string{"Accept": "application/json, text/event-stream"}
			for k, v := range c.header {
				rq.header[k] = v
			}
			r := e.do(rq)
			if r.status != c.status || r.errCode(t) != c.code {
				t.Errorf("%s: %s %s: %d %s; want %d %s", c.name, rq.method, rq.path, r.status, r.body, c.status, c.code)
			}
		}
	}
	if after := len(e.transcriptOf("alice", "two")); after != before {
		t.Fatalf("alice's session went from %d to %d entries", before, after)
	}
}
