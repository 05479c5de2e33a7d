package server_test

import (
	"maps"
	"net/url"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
)

// hostileIDs are ids no session or user may have.
var hostileIDs = map[string]string{
	"parent folder":     "../x",
	"slash":             "a/b",
	"absolute":          "/etc/passwd",
	"backslash":         `a\b`,
	"windows parent":    `..\x`,
	"NUL":               "a\x00b",
	"Cyrillic а":        "\u0430dmin",
	"fullwidth solidus": "a\uff0fb",
	"fullwidth dots":    "\uff0e\uff0e",
	"10 KB":             strings.Repeat("a", 10<<10),
	"newline":           "a\nb",
	"space":             "a b",
	"encoded slash":     "a%2Fb",
}

// hostileEnv is a user-scoped agent on a file store with keys for alice
// and bob; alice has sessions "one" and "two", bob has "one". The sessions
// are written through a Store that is closed before the env's own Store
// opens: a file store writes a burst's index records once the session is
// idle, so a Store that wrote them could change the folder under a test
// that checks it is untouched.
func hostileEnv(t *testing.T) (*env, string) {
	t.Helper()
	root := t.TempDir()
	open := func() (*env, func()) {
		st, err := filestore.New(t.Context(), root, filestore.WithRetention(store.Retention{}))
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, spool.Config{Store: st, Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t), MaxBodyBytes: 64 << 10})
		return e, func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	seed, done := open()
	for _, c := range []struct{ key, id string }{{aliceKey, "one"}, {aliceKey, "two"}, {bobKey, "one"}} {
		seed.key = c.key
		if r := seed.post("/invoke", map[string]any{"prompt": "secret of " + c.key[:3] + " in " + c.id, "sessionId": c.id}); r.status != 200 {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	done()
	e, done := open()
	t.Cleanup(done)
	// Listings load each scope's index once; later reads write nothing.
	for _, k := range []string{aliceKey, bobKey} {
		e.key = k
		e.get("/v1/sessions")
	}
	return e, root
}

// TestHostileHTTP: hostile ids in URLs and bodies, bodies over the limit,
// deeply nested JSON, bogus cursors and another user's cursors each get a
// 4xx JSON error that reveals nothing of another user, and the store's
// files do not change.
func TestHostileHTTP(t *testing.T) {
	e, root := hostileEnv(t)
	before := spooltest.FileTree(t, root)
	e.key = bobKey

	// 4xx with a JSON error, and nothing of alice's in the answer.
	expect := func(what string, r resp, statuses ...int) {
		t.Helper()
		ok := false
		for _, s := range statuses {
			ok = ok || r.status == s
		}
		if !ok {
			t.Fatalf("%s: %d %.200s; want %v", what, r.status, r.body, statuses)
		}
		r.errCode(t)
		if strings.Contains(string(r.body), "secret of ali") {
			t.Fatalf("%s: the answer holds alice's content: %.200s", what, r.body)
		}
	}

	for name, id := range hostileIDs {
		p := "/v1/sessions/" + url.PathEscape(id)
		expect(name+": GET info", e.get(p), 404)
		expect(name+": GET messages", e.get(p+"/messages"), 404)
		expect(name+": GET history", e.get(p+"/history"), 404)
		expect(name+": GET approvals", e.get(p+"/approvals"), 404)
		expect(name+": DELETE", e.do(req{method: "DELETE", path: p}), 404)
		expect(name+": POST decision", e.post(p+"/approvals/apr_1", map[string]string{"decision": "allow"}), 404)
		expect(name+": /invoke", e.post("/invoke", map[string]string{"prompt": "hi", "sessionId": id}), 400)
		expect(name+": /chat", e.post("/chat", map[string]string{"text": "hi", "sessionId": id}), 400)
		expect(name+": /api/chat", e.post("/api/chat", map[string]any{"id": id, "messages": []any{map[string]any{"id": "m", "role": "user", "parts": []any{map[string]string{"type": "text", "text": "hi"}}}}}), 400)
		// As the user a project key acts for (a header cannot carry
		// control characters: the client refuses them).
		if strings.ContainsAny(id, "\x00\n") {
			continue
		}
		saved := e.key
		e.key = projectKey
		expect(name+": as X-Spool-User", e.get("/v1/sessions", "X-Spool-User", id), 400, 403)
		e.key = saved
	}
	// The dot segments: the router cleans the path, so they never name
	// a session.
	for _, p := range []string{"/v1/sessions/%2E%2E/messages", "/v1/sessions/./messages"} {
		if r := e.get(p); r.status < 300 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}

	// Another user's session: 404 on every route, as if it did not exist.
	for _, p := range []string{"/v1/sessions/two", "/v1/sessions/two/messages", "/v1/sessions/two/history", "/v1/sessions/two/approvals"} {
		expect("alice's session for bob: "+p, e.get(p), 404)
	}
	expect("bob deletes alice's session", e.do(req{method: "DELETE", path: "/v1/sessions/two"}), 404)

	// Bodies over the limit, deeply nested, or malformed.
	big := strings.Repeat("x", 65<<10)
	expect("a prompt over the body limit", e.post("/invoke", map[string]string{"prompt": big, "sessionId": "one"}), 413)
	expect("a chat text over the body limit", e.post("/chat", map[string]string{"text": big, "sessionId": "one"}), 413)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	expect("a prompt nested 10,000 deep", e.post("/invoke", `{"prompt":`+deep+`,"sessionId":"one"}`), 400)
	expect("a body nested 10,000 deep", e.post("/chat", deep), 400)
	expect("api/chat parts nested 10,000 deep", e.post("/api/chat", `{"id":"one","messages":[{"id":"m","role":"user","parts":`+deep+`}]}`), 400)
	expect("a decision nested 10,000 deep", e.post("/v1/sessions/one/approvals/apr_1", `{"decision":`+deep+`}`), 400)

	// Bogus cursors and alice's cursors.
	for _, c := range []string{"bogus", "!!!", strings.Repeat("A", 4000), "%00"} {
		expect("list cursor "+c[:min(len(c), 8)], e.get("/v1/sessions?cursor="+url.QueryEscape(c)), 400)
		expect("page cursor "+c[:min(len(c), 8)], e.get("/v1/sessions/one/messages?cursor="+url.QueryEscape(c)), 400)
	}
	e.key = aliceKey
	var list struct {
		NextCursor *string `json:"nextCursor"`
	}
	e.get("/v1/sessions?limit=1").json(t, &list)
	var page struct {
		NextCursor *string `json:"nextCursor"`
	}
	e.get("/v1/sessions/one/messages?limit=1").json(t, &page)
	if list.NextCursor == nil || page.NextCursor == nil {
		t.Fatal("alice's pages have no next cursor")
	}
	e.key = bobKey
	expect("bob with alice's list cursor", e.get("/v1/sessions?cursor="+url.QueryEscape(*list.NextCursor)), 400)
	expect("bob with alice's page cursor", e.get("/v1/sessions/one/messages?cursor="+url.QueryEscape(*page.NextCursor)), 400)

	if after := spooltest.FileTree(t, root); !maps.Equal(before, after) {
		for k := range after {
			if before[k] != after[k] {
				t.Errorf("%s changed", k)
			}
		}
		t.Fatal("hostile requests changed the store")
	}
}
