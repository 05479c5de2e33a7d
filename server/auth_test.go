package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

const (
	aliceKey   = "alice-key-0123456789"
	bobKey     = "bob-key-0123456789ab"
	projectKey = "project-key-0123456789"
)

func testKeys(t *testing.T) *server.APIKeys {
	t.Helper()
	sum := sha256.Sum256([]byte(bobKey))
	k, err := server.NewAPIKeys(
		server.APIKey{Name: "alice", Key: aliceKey, User: "alice"},
		server.APIKey{Name: "bob", SHA256: hex.EncodeToString(sum[:]), User: "bob"},
		server.APIKey{Name: "backend", Key: projectKey, Project: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestLoadAPIKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := `{"keys":[{"name":"a","key":"` + aliceKey + `","user":"alice"},{"key":"` + projectKey + `","project":true}]}`
	k, err := server.LoadAPIKeys(write("good.json", good, 0o600))
	if err != nil || k.Len() != 2 {
		t.Fatalf("%v %d", err, k.Len())
	}
	if runtime.GOOS != "windows" {
		if _, err := server.LoadAPIKeys(write("open.json", good, 0o644)); !errors.Is(err, server.ErrKeysFileMode) {
			t.Fatalf("world-readable file: %v", err)
		}
		// Not readable by others, but writable: anyone could add a key.
		if _, err := server.LoadAPIKeys(write("writable.json", good, 0o602)); !errors.Is(err, server.ErrKeysFileMode) {
			t.Fatalf("world-writable file: %v", err)
		}
		// Writable by its group: any member could add a key.
		if _, err := server.LoadAPIKeys(write("group.json", good, 0o620)); !errors.Is(err, server.ErrKeysFileMode) {
			t.Fatalf("group-writable file: %v", err)
		}
		// Readable by its group only: taken (spool serve warns).
		if _, err := server.LoadAPIKeys(write("groupread.json", good, 0o640)); err != nil {
			t.Fatalf("group-readable file: %v", err)
		}
	}
	bad := map[string]string{
		"unknown field":    `{"keys":[{"key":"` + aliceKey + `","usr":"alice"}]}`,
		"no keys":          `{"keys":[]}`,
		"short key":        `{"keys":[{"key":"short","project":true}]}`,
		"user and project": `{"keys":[{"key":"` + aliceKey + `","user":"a","project":true}]}`,
		"neither":          `{"keys":[{"key":"` + aliceKey + `"}]}`,
		"bad user":         `{"keys":[{"key":"` + aliceKey + `","user":"a/b"}]}`,
		"bad digest":       `{"keys":[{"sha256":"abc","project":true}]}`,
		"duplicate":        `{"keys":[{"key":"` + aliceKey + `","project":true},{"key":"` + aliceKey + `","user":"a"}]}`,
		"not JSON":         `keys:`,
		"two objects":      `{"keys":[{"key":"` + aliceKey + `","project":true}]}` + "\n" + `{"keys":[{"key":"` + bobKey + `","user":"bob"}]}`,
		"trailing text":    `{"keys":[{"key":"` + aliceKey + `","project":true}]} ,`,
	}
	for name, content := range bad {
		_, err := server.LoadAPIKeys(write(strings.ReplaceAll(name, " ", "_")+".json", content, 0o600))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if strings.Contains(err.Error(), aliceKey) {
			t.Fatalf("%s: the error shows the key: %v", name, err)
		}
	}
}

func TestAuthRequired(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{Keys: testKeys(t)})
	for _, h := range []map[string]string{
		{},
		{"Authorization": "Bearer wrong-key-0123456789"},
		{"Authorization": "Basic " + projectKey},
		{"Authorization": "Bearer"},
	} {
		for _, p := range []string{"/v1/sessions", "/v1/sessions/x", "/nowhere"} {
			r := e.do(req{method: "GET", path: p, header: h})
			if r.status != 401 || r.errCode(t) != server.CodeUnauthorized {
				t.Fatalf("%v %s: %d %s", h, p, r.status, r.body)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("no WWW-Authenticate: %v", r.header)
			}
		}
	}
	r := e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": "hi"}, header: map[string]string{"Authorization": "Bearer " + projectKey}})
	if r.status != 200 {
		t.Fatalf("project key: %d %s", r.status, r.body)
	}
	// The hex digest form authenticates the key, not the digest.
	r = e.do(req{method: "GET", path: "/v1/sessions", header: map[string]string{"Authorization": "Bearer " + bobKey}})
	if r.status != 200 {
		t.Fatalf("bob: %d %s", r.status, r.body)
	}
}

// Merge refuses a key that both sets have, whatever the form it is given
// in: merged, Alice's key would authenticate as the project key that came
// last and act for Bob through X-Spool-User.
func TestMergeRefusesAKeyTwice(t *testing.T) {
	project, err := server.NewAPIKeys(server.APIKey{Name: "api-key", Key: aliceKey, Project: true})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := testKeys(t).Merge(project); err == nil || k != nil || !strings.Contains(err.Error(), `"api-key" is also key "alice"`) {
		t.Fatalf("merged %d keys, error %v", k.Len(), err)
	}
	other, err := server.NewAPIKeys(server.APIKey{Key: "another-key-0123456789", Project: true})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := testKeys(t).Merge(other); err != nil || k.Len() != 4 {
		t.Fatalf("merged %d keys, error %v", k.Len(), err)
	}
}

// A user-scoped agent serves each user only their own sessions: Bob with
// Alice's session id gets 404 everywhere, and never sees it listed.
func TestUserIsolation(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	alice := map[string]string{"Authorization": "Bearer " + aliceKey}
	bob := map[string]string{"Authorization": "Bearer " + bobKey}
	r := e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": `/call save_note {"text":"secret"}`, "sessionId": "a1"}, header: alice})
	var res spool.Result
	r.json(t, &res)
	if r.status != 200 || len(res.Pending) != 1 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	apID := res.Pending[0].ID
	for _, c := range []req{
		{method: "GET", path: "/v1/sessions/a1"},
		{method: "GET", path: "/v1/sessions/a1/messages"},
		{method: "GET", path: "/v1/sessions/a1/history"},
		{method: "GET", path: "/v1/sessions/a1/approvals"},
		{method: "POST", path: "/v1/sessions/a1/approvals/" + apID, body: map[string]any{"decision": "allow"}},
		{method: "DELETE", path: "/v1/sessions/a1"},
	} {
		c.header = bob
		r := e.do(c)
		if r.status != 404 || r.errCode(t) != server.CodeSessionNotFound {
			t.Fatalf("bob %s %s: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	var list listBody
	e.do(req{method: "GET", path: "/v1/sessions", header: bob}).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("bob lists %+v", list.Sessions)
	}
	// Bob's session under the same id is his own, and Alice's is intact.
	e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": "mine", "sessionId": "a1"}, header: bob})
	e.do(req{method: "GET", path: "/v1/sessions", header: bob}).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Owner != "bob" {
		t.Fatalf("bob lists %+v", list.Sessions)
	}
	var aps struct{ Approvals []spool.Approval }
	e.do(req{method: "GET", path: "/v1/sessions/a1/approvals", header: alice}).json(t, &aps)
	if len(aps.Approvals) != 1 || aps.Approvals[0].ID != apID {
		t.Fatalf("alice's approvals %+v", aps)
	}
	e.do(req{method: "GET", path: "/v1/sessions", header: alice}).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Owner != "alice" || list.Sessions[0].Title != "" { // a command line is no title
		t.Fatalf("alice lists %+v", list.Sessions)
	}
	// A user key acts for its own user only.
	h := map[string]string{"Authorization": "Bearer " + bobKey, server.UserHeader: "alice"}
	if r := e.do(req{method: "GET", path: "/v1/sessions", header: h}); r.status != 403 || r.errCode(t) != server.CodeForbidden {
		t.Fatalf("bob as alice: %d %s", r.status, r.body)
	}
}

// A project key on a user-scoped agent names the user it acts for.
func TestProjectKeyOnUserScopedAgent(t *testing.T) {
	e := newEnv(t, spool.Config{Scope: spool.ScopeUser}, server.Options{Keys: testKeys(t)})
	h := map[string]string{"Authorization": "Bearer " + projectKey}
	if r := e.do(req{method: "GET", path: "/v1/sessions", header: h}); r.status != 403 || r.errCode(t) != server.CodeUserRequired {
		t.Fatalf("without a user: %d %s", r.status, r.body)
	}
	h[server.UserHeader] = "carol"
	if r := e.do(req{method: "POST", path: "/invoke", body: map[string]any{"prompt": "hi", "sessionId": "c"}, header: h}); r.status != 200 {
		t.Fatalf("as carol: %d %s", r.status, r.body)
	}
	if got := e.transcriptOf("carol", "c"); len(got) == 0 {
		t.Fatal("carol's session is not under carol")
	}
	h[server.UserHeader] = "not/valid"
	if r := e.do(req{method: "GET", path: "/v1/sessions", header: h}); r.status != 400 {
		t.Fatalf("invalid user: %d %s", r.status, r.body)
	}
}

// Without keys, the server answers only to loopback Host names: a page
// that rebinds its own name to 127.0.0.1 cannot reach it.
func TestNoKeysLoopbackHostsOnly(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{AllowedHosts: []string{"spool.internal"}})
	for host, want := range map[string]int{
		"evil.example.com":      403,
		"evil.example.com:8080": 403,
		"localhost:1234":        200,
		"127.0.0.1":             200,
		"[::1]:80":              200,
		"spool.internal":        200,
		"spool.internal:9000":   200,
	} {
		hr := e.newRequest(t.Context(), req{method: "GET", path: "/v1/sessions"})
		hr.Host = host
		res, err := e.http.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
	// With keys, the key is the protection and any Host is served.
	k := newEnv(t, spool.Config{}, server.Options{Keys: testKeys(t)})
	k.key = projectKey
	hr := k.newRequest(t.Context(), req{method: "GET", path: "/v1/sessions"})
	hr.Host = "spool.example.com"
	res, err := k.http.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("with keys: %d", res.StatusCode)
	}
}

// Without keys, a request that changes something is refused when it comes
// from another site's page: a form or a no-cors fetch needs no preflight
// and carries the server's own Host, so the Host check lets it through.
// The server's own pages, an allowed origin and programs (no Origin) go
// on; so do reads.
func TestNoKeysCrossSiteRefused(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{AllowedOrigins: []string{"https://app.example.com"}})
	if r := e.post("/invoke", map[string]string{"prompt": "hello", "sessionId": "http"}); r.status != 200 {
		t.Fatalf("seed: %d %s", r.status, r.body)
	}
	s, err := e.agent.Session(t.Context(), "http")
	if err != nil {
		t.Fatal(err)
	}
	entries := func() int {
		t.Helper()
		tr, err := s.Transcript(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return len(tr)
	}
	host := strings.TrimPrefix(e.http.URL, "http://")
	for _, c := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"another site's form", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403},
		{"another site's form, from a browser that says so", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"a cross-site fetch without Origin", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"a local page on another port", map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}, 403},
		{"the server's own page", map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}, 200},
		{"the server's own page, from an older browser", map[string]string{"Origin": "http://" + host}, 200},
		{"a page behind a proxy that sets Host", map[string]string{"Origin": "http://127.0.0.1:5173", "Sec-Fetch-Site": "same-origin"}, 200},
		{"an allowed origin", map[string]string{"Origin": "https://app.example.com", "Sec-Fetch-Site": "cross-site"}, 200},
		{"a program", nil, 200},
	} {
		before := entries()
		r := e.do(req{method: "POST", path: "/v1/sessions/http/regenerate", header: c.header})
		if r.status != c.want {
			t.Fatalf("%s: %d %s, want %d", c.name, r.status, r.body, c.want)
		}
		if ran := entries() != before; ran != (c.want == 200) {
			t.Fatalf("%s: the turn ran: %v", c.name, ran)
		}
	}
	if r := e.get("/v1/sessions", "Origin", "https://evil.example"); r.status != 200 {
		t.Fatalf("a cross-site read: %d", r.status)
	}
}
