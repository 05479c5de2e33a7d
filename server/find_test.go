package server_test

import (
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
)

// TestSearchRoute: GET /v1/search finds the caller's messages with every
// word, newest first, with the session's title; another user's are never
// found; a blank query names the field.
func TestSearchRoute(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := map[string]string{"Authorization": "Bearer " + aliceKey}
	bob := map[string]string{"Authorization": "Bearer " + bobKey}
	for _, p := range []struct{ id, prompt string }{{"a1", "Plan a trip to Lisbon"}, {"a2", "Lisbon trams at night"}, {"a3", "Porto wine"}} {
		if r := e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": p.prompt, "sessionId": p.id}, header: alice}); r.status != 200 {
			t.Fatalf("invoke: %d %s", r.status, r.body)
		}
	}
	e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": "Lisbon secrets of bob", "sessionId": "b1"}, header: bob})

	var res struct {
		Hits []struct {
			SessionID, EntryID, Snippet, Title string
		}
	}
	r := e.do(req{method: "GET", path: "/v1/search?q=LISBON+trip", header: alice})
	if r.status != 200 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	r.json(t, &res)
	// The question and its echoed answer, newest first.
	if len(res.Hits) != 2 || res.Hits[0].SessionID != "a1" || res.Hits[0].Title != "Plan a trip to Lisbon" || res.Hits[0].EntryID == "" {
		t.Fatalf("hits %+v, want the two messages of a1 with its title", res.Hits)
	}
	r = e.do(req{method: "GET", path: "/v1/search?q=lisbon&limit=1000", header: alice})
	r.json(t, &res)
	for _, h := range res.Hits {
		if h.SessionID == "b1" {
			t.Fatalf("alice's search found bob's session: %+v", h)
		}
	}
	if len(res.Hits) != 4 {
		t.Errorf("%d hits for lisbon, want 4 (two sessions, question and answer)", len(res.Hits))
	}
	for _, bad := range []string{"/v1/search", "/v1/search?q=+", "/v1/search?q=x&limit=0"} {
		r := e.do(req{method: "GET", path: bad, header: alice})
		if r.status != 400 {
			t.Errorf("GET %s: %d %s, want 400", bad, r.status, r.body)
		}
	}
}

// TestRenameRoute: PATCH /v1/sessions/{id} renames (the list and the info
// carry the title), refuses a blank title naming the field, 404s an
// unknown session and another user's, and never creates a session.
func TestRenameRoute(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := map[string]string{"Authorization": "Bearer " + aliceKey}
	bob := map[string]string{"Authorization": "Bearer " + bobKey}
	e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": "first question", "sessionId": "s"}, header: alice})

	r := e.do(req{method: "PATCH", path: "/v1/sessions/s", body: map[string]any{"title": "  My\ntrip "}, header: alice})
	var info store.SessionInfo
	r.json(t, &info)
	if r.status != 200 || info.Title != "My trip" {
		t.Fatalf("rename: %d %s", r.status, r.body)
	}
	var list struct{ Sessions []store.SessionInfo }
	e.do(req{method: "GET", path: "/v1/sessions", header: alice}).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Title != "My trip" {
		t.Fatalf("the list shows %+v", list.Sessions)
	}
	for _, c := range []struct {
		path   string
		body   any
		header map[string]string
		status int
		code   string
	}{
		{"/v1/sessions/s", map[string]any{"title": " \t"}, alice, 400, "bad_request"},
		{"/v1/sessions/s", map[string]any{}, alice, 400, "bad_request"},
		{"/v1/sessions/s", map[string]any{"title": "x", "extra": 1}, alice, 400, "invalid_request"},
		{"/v1/sessions/nope", map[string]any{"title": "x"}, alice, 404, "session_not_found"},
		{"/v1/sessions/s", map[string]any{"title": "stolen"}, bob, 404, "session_not_found"},
	} {
		r := e.do(req{method: "PATCH", path: c.path, body: c.body, header: c.header})
		if r.status != c.status || r.errCode(t) != c.code {
			t.Errorf("PATCH %s %v: %d %s, want %d %s", c.path, c.body, r.status, r.body, c.status, c.code)
		}
	}
	if r := e.do(req{method: "GET", path: "/v1/sessions/nope", header: alice}); r.status != 404 {
		t.Errorf("a refused rename created the session: %d", r.status)
	}
	e.do(req{method: "GET", path: "/v1/sessions/s", header: alice}).json(t, &info)
	if info.Title != "My trip" {
		t.Errorf("after refused renames the title is %q", info.Title)
	}
}
