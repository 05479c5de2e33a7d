package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantHeader(t *testing.T, rec *httptest.ResponseRecorder, name, want string) {
	t.Helper()
	if got := rec.Header().Get(name); got != want {
		t.Errorf("%s: %q, want %q", name, got, want)
	}
}

func TestPage(t *testing.T) {
	h := Handler()
	rec := get(t, h, "GET", "/", nil)
	if rec.Code != 200 {
		t.Fatalf("GET /: %d", rec.Code)
	}
	wantHeader(t, rec, "Content-Type", "text/html; charset=utf-8")
	wantHeader(t, rec, "Content-Security-Policy", ContentSecurityPolicy)
	wantHeader(t, rec, "Cache-Control", "no-cache")
	wantHeader(t, rec, "X-Content-Type-Options", "nosniff")
	wantHeader(t, rec, "X-Frame-Options", "DENY")
	body := rec.Body.String()
	if strings.Contains(body, placeholder) {
		t.Errorf("the page still holds %s", placeholder)
	}
	if !strings.Contains(body, `src="assets/`+Version()+`/app.js"`) {
		t.Errorf("the page does not load assets/%s/app.js", Version())
	}
	// No inline script, style or handler: the CSP would refuse them.
	for _, re := range []string{`<script(?:(?:\s+[a-z-]+(?:="[^"]*")?)*)>\s*[^<\s]`, `<style`, `\son[a-z]+=`, `style="`} {
		if m := regexp.MustCompile(re).FindString(body); m != "" {
			t.Errorf("inline content in the page: %q", m)
		}
	}
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
		if !strings.Contains(m, ` src="assets/`) {
			t.Errorf("script without a src in the assets: %s", m)
		}
	}

	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if rec := get(t, h, "GET", "/", map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", rec.Code)
	}
	if rec := get(t, h, "HEAD", "/", nil); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD /: %d with %d bytes", rec.Code, rec.Body.Len())
	}
}

func TestGzip(t *testing.T) {
	h := Handler()
	plain := get(t, h, "GET", "/", nil)
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "*", "deflate, GZIP"} {
		rec := get(t, h, "GET", "/", map[string]string{"Accept-Encoding": ae})
		wantHeader(t, rec, "Content-Encoding", "gzip")
		wantHeader(t, rec, "Vary", "Accept-Encoding")
		if rec.Header().Get("ETag") == plain.Header().Get("ETag") {
			t.Errorf("%q: the gzipped body has the plain body's ETag", ae)
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatalf("%q: %v", ae, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(b, plain.Body.Bytes()) {
			t.Errorf("%q: the gzipped body differs from the page (%v)", ae, err)
		}
	}
	// The last: gzip named with q=0 is refused even though "*" is allowed.
	for _, ae := range []string{"", "identity", "gzip;q=0", "br", "*;q=0", "gzip;q=0, *"} {
		rec := get(t, h, "GET", "/", map[string]string{"Accept-Encoding": ae})
		if ce := rec.Header().Get("Content-Encoding"); ce != "" {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", ae, ce)
		}
		if !bytes.Equal(rec.Body.Bytes(), plain.Body.Bytes()) {
			t.Errorf("Accept-Encoding %q: not the plain page", ae)
		}
	}
}

// Every file the page and the modules refer to is served, with its type
// and a long cache life.
func TestAssets(t *testing.T) {
	h := Handler()
	page := get(t, h, "GET", "/", nil).Body.String()
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:src|href)="assets/[0-9a-f]{16}/([^"]+)"`).FindAllStringSubmatch(page, -1) {
		refs[m[1]] = true
	}
	imports := regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?from\s*'\./([^']+)'`)
	checked := map[string]bool{}
	for len(refs) > 0 {
		for name := range refs {
			delete(refs, name)
			if checked[name] {
				continue
			}
			checked[name] = true
			rec := get(t, h, "GET", "/assets/"+Version()+"/"+name, nil)
			if rec.Code != 200 {
				t.Errorf("%s: %d", name, rec.Code)
				continue
			}
			wantHeader(t, rec, "Cache-Control", "public, max-age=31536000, immutable")
			wantHeader(t, rec, "Content-Security-Policy", ContentSecurityPolicy)
			if got, want := rec.Header().Get("Content-Type"), contentTypes[path.Ext(name)]; got != want {
				t.Errorf("%s: Content-Type %q, want %q", name, got, want)
			}
			for _, m := range imports.FindAllStringSubmatch(rec.Body.String(), -1) {
				refs[m[1]] = true
			}
		}
	}
	for _, name := range []string{"app.js", "api.js", "sse.js", "conversation.js", "list.js", "auth.js", "dom.js", "style.css", "icon.svg"} {
		if !checked[name] {
			t.Errorf("%s is never loaded", name)
		}
	}
}

func TestNotFound(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/index.html", "/favicon.ico", "/assets/", "/assets/" + Version() + "/", "/assets/" + Version() + "/nope.js",
		"/assets/0000000000000000/app.js", "/assets/app.js", "/assets/" + Version() + "/../index.html", "/static/app.js"} {
		rec := get(t, h, "GET", p, nil)
		if rec.Code != 404 {
			t.Errorf("%s: %d, want 404", p, rec.Code)
			continue
		}
		wantHeader(t, rec, "Content-Type", "application/json")
		wantHeader(t, rec, "Cache-Control", "no-store")
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != "not_found" {
			t.Errorf("%s: body %s", p, rec.Body)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		rec := get(t, h, m, "/", nil)
		if rec.Code != 405 {
			t.Errorf("%s /: %d, want 405", m, rec.Code)
		}
		wantHeader(t, rec, "Allow", "GET, HEAD")
	}
}

// Relative URLs: mounted under a prefix, the page and its assets are
// found there.
func TestPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", Handler()))
	page := get(t, mux, "GET", "/ui/", nil)
	if page.Code != 200 {
		t.Fatalf("GET /ui/: %d", page.Code)
	}
	m := regexp.MustCompile(`src="(assets/[^"]+)"`).FindStringSubmatch(page.Body.String())
	if m == nil {
		t.Fatal("no script in the page")
	}
	if rec := get(t, mux, "GET", "/ui/"+m[1], nil); rec.Code != 200 {
		t.Errorf("GET /ui/%s: %d", m[1], rec.Code)
	}
}

// Content goes into the page as text only: no module of ours uses an HTML
// sink or evaluates strings, and nothing is loaded from elsewhere. The
// vendored libraries (static/vendor, see TestVendoredFiles) are held by
// the CSP instead: their sinks take only what DOMPurify's Trusted Types
// policy made, and eval is not allowed at all.
func TestNoHTMLSinks(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(\s*['"\x60]|srcdoc|createContextualFragment|DOMParser`)
	remote := regexp.MustCompile(`(?:src|href|from|import|url)\s*[=(]?\s*['"]?(?:https?:)?//`)
	err := fs.WalkDir(static, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		if m := sinks.Find(b); m != nil && path.Ext(name) == ".js" && !strings.HasPrefix(name, "static/vendor/") {
			t.Errorf("%s uses %s", name, m)
		}
		if m := remote.Find(b); m != nil {
			t.Errorf("%s refers to another origin: %s", name, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := build(fstest.MapFS{"static/app.js": {Data: []byte("x")}}); err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Errorf("without index.html: %v", err)
	}
	_, err := build(fstest.MapFS{
		"static/index.html": {Data: []byte("<!doctype html>")},
		"static/notes.txt":  {Data: []byte("x")},
	})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("an unknown type: %v", err)
	}
	a, err := build(fstest.MapFS{"static/index.html": {Data: []byte(`<script src="{{assets}}a.js"></script>`)}, "static/a.js": {Data: []byte("1")}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := build(fstest.MapFS{"static/index.html": {Data: []byte(`<script src="{{assets}}a.js"></script>`)}, "static/a.js": {Data: []byte("2")}})
	if err != nil {
		t.Fatal(err)
	}
	if a.version == b.version {
		t.Errorf("a change of an asset keeps the version %s", a.version)
	}
	if !bytes.Contains(a.page.body, []byte(`src="assets/`+a.version+`/a.js"`)) {
		t.Errorf("page %s", a.page.body)
	}
}
