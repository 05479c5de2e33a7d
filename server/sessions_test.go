package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
)

type listBody struct {
	Sessions   []store.SessionInfo `json:"sessions"`
	NextCursor *string             `json:"nextCursor"`
}

type messagesBody struct {
	Messages   []spool.Message `json:"messages"`
	NextCursor *string         `json:"nextCursor"`
}

func TestListSessionsPages(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for i := range 5 {
		e.post("/invoke", map[string]any{"prompt": fmt.Sprintf("hi %d", i), "sessionId": fmt.Sprintf("s%d", i)})
	}
	var ids []string
	path := "/v1/sessions?limit=2"
	for pages := 0; ; pages++ {
		r := e.get(path)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var b listBody
		r.json(t, &b)
		if !strings.Contains(string(r.body), `"compactions":0`) {
			t.Fatalf("list records carry no compaction count: %s", r.body)
		}
		for _, s := range b.Sessions {
			ids = append(ids, s.ID)
		}
		if b.NextCursor == nil {
			break
		}
		if pages > 5 {
			t.Fatal("too many pages")
		}
		path = "/v1/sessions?limit=2&cursor=" + url.QueryEscape(*b.NextCursor)
	}
	if fmt.Sprint(ids) != "[s4 s3 s2 s1 s0]" {
		t.Fatalf("listed %v", ids)
	}
	var empty listBody
	e2 := newEnv(t, spool.Config{}, server.Options{})
	r := e2.get("/v1/sessions")
	r.json(t, &empty)
	if string(r.body) != `{"sessions":[],"nextCursor":null}`+"\n" {
		t.Fatalf("empty list %s", r.body)
	}
	for _, bad := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=bogus"} {
		r := e.get("/v1/sessions" + bad)
		if r.status != 400 {
			t.Fatalf("%s: %d %s", bad, r.status, r.body)
		}
		want := server.CodeBadRequest
		if bad == "?cursor=bogus" {
			want = server.CodeInvalidCursor
		}
		if code := r.errCode(t); code != want {
			t.Fatalf("%s: code %s", bad, code)
		}
	}
}

func TestSessionRoutes(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for i := range 3 {
		e.post("/invoke", map[string]any{"prompt": fmt.Sprintf("q%d", i), "sessionId": "s"})
	}
	var info store.SessionInfo
	r := e.get("/v1/sessions/s")
	r.json(t, &info)
	if r.status != 200 || info.ID != "s" || info.MessageCount != 6 || info.Title != "q0" {
		t.Fatalf("%d %s", r.status, r.body)
	}

	// Messages, newest first by default, in pages joined by the cursor.
	var got []string
	path := "/v1/sessions/s/messages?limit=4"
	for {
		var b messagesBody
		e.get(path).json(t, &b)
		for _, m := range b.Messages {
			got = append(got, m.Text)
		}
		if b.NextCursor == nil {
			break
		}
		path = "/v1/sessions/s/messages?limit=4&cursor=" + url.QueryEscape(*b.NextCursor)
	}
	if fmt.Sprint(got) != "[echo: q2 q2 echo: q1 q1 echo: q0 q0]" {
		t.Fatalf("desc %v", got)
	}
	var asc messagesBody
	e.get("/v1/sessions/s/messages?order=asc&limit=2").json(t, &asc)
	if len(asc.Messages) != 2 || asc.Messages[0].Text != "q0" || asc.NextCursor == nil {
		t.Fatalf("asc %+v", asc)
	}
	// A cursor of one order is not valid for the other.
	if r := e.get("/v1/sessions/s/messages?order=desc&cursor=" + url.QueryEscape(*asc.NextCursor)); r.status != 400 || r.errCode(t) != server.CodeInvalidCursor {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.get("/v1/sessions/s/messages?order=sideways"); r.status != 400 {
		t.Fatalf("%d %s", r.status, r.body)
	}

	var hist struct {
		Messages []struct{ Role, Content string }
	}
	e.get("/v1/sessions/s/history").json(t, &hist)
	if len(hist.Messages) != 6 || hist.Messages[0].Role != "user" || hist.Messages[5].Content != "echo: q2" {
		t.Fatalf("history %+v", hist)
	}

	var aps struct{ Approvals []spool.Approval }
	e.get("/v1/sessions/s/approvals").json(t, &aps)
	if aps.Approvals == nil || len(aps.Approvals) != 0 {
		t.Fatalf("approvals %+v", aps)
	}

	if r := e.do(req{method: "DELETE", path: "/v1/sessions/s"}); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1/sessions/s", "/v1/sessions/s/messages", "/v1/sessions/s/history", "/v1/sessions/s/approvals"} {
		if r := e.get(p); r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
			t.Fatalf("%s after delete: %d %s", p, r.status, r.body)
		}
	}
	if r := e.do(req{method: "DELETE", path: "/v1/sessions/s"}); r.status != 404 {
		t.Fatalf("second delete: %d %s", r.status, r.body)
	}
	// An id no session can have, in a URL, is reported like an unknown one.
	if r := e.get("/v1/sessions/a:b"); r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
		t.Fatalf("invalid id: %d %s", r.status, r.body)
	}
}

func TestApprovalRoute(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"a"}`, "sessionId": "ap"}).json(t, &res)
	var aps struct{ Approvals []spool.Approval }
	e.get("/v1/sessions/ap/approvals").json(t, &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].ID != res.Pending[0].ID || aps.Approvals[0].Tool != "save_note" {
		t.Fatalf("approvals %+v", aps)
	}
	id := aps.Approvals[0].ID
	for _, bad := range []string{`{"decision":"maybe"}`, `{"decision":"allow","scope":"forever"}`, `{"decision":"allow","extra":1}`, `{`} {
		if r := e.post("/v1/sessions/ap/approvals/"+id, bad); r.status != 400 {
			t.Fatalf("%s: %d %s", bad, r.status, r.body)
		}
	}
	if r := e.post("/v1/sessions/ap/approvals/apr_nope", map[string]any{"decision": "allow"}); r.status != 404 || r.errCode(t) != server.CodeApprovalNotFound {
		t.Fatalf("unknown approval: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sessions/nope/approvals/"+id, map[string]any{"decision": "allow"}); r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
		t.Fatalf("unknown session: %d %s", r.status, r.body)
	}
	r := e.post("/v1/sessions/ap/approvals/"+id, map[string]any{"decision": "deny", "reason": "not now"})
	var after spool.Result
	r.json(t, &after)
	if r.status != 200 || after.Status != "ok" || after.Text != "tool save_note returned: error: the user denied this call: not now" {
		t.Fatalf("deny: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sessions/ap/approvals/"+id, map[string]any{"decision": "allow"}); r.status != 404 {
		t.Fatalf("answered twice: %d %s", r.status, r.body)
	}
	// Scope session: the tool then runs without asking.
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"b"}`, "sessionId": "ap"}).json(t, &res)
	e.post("/v1/sessions/ap/approvals/"+res.Pending[0].ID, map[string]any{"decision": "allow", "scope": "session"})
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"c"}`, "sessionId": "ap"}).json(t, &res)
	if res.Status != "ok" || res.Text != "tool save_note returned: saved: c" {
		t.Fatalf("after session approval: %+v", res)
	}
}

func TestMethodNotAllowedAndUnknownRoutes(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	cases := []struct{ method, path, allow string }{
		{"GET", "/invoke", "POST"},
		{"PUT", "/chat", "POST"},
		{"POST", "/v1/sessions", "GET, HEAD"},
		{"PUT", "/v1/sessions/x", "GET, HEAD, DELETE, PATCH"},
		{"DELETE", "/v1/sessions/x/approvals/y", "POST"},
		{"GET", "/api/chat", "POST"},
		{"GET", "/mcp", "POST"},
	}
	for _, c := range cases {
		r := e.do(req{method: c.method, path: c.path})
		if r.status != 405 || r.errCode(t) != server.CodeMethodNotAllowed {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.status, r.body)
		}
		if got := r.header.Get("Allow"); got != c.allow {
			t.Fatalf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	if r := e.get("/nowhere"); r.status != 404 || r.errCode(t) != server.CodeNotFound {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
