package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is the policy of every response of the UI:
// scripts, styles, images and connections from the page's own origin
// only, no inline script or style, no eval, no plugins, no framing, and
// Trusted Types required, so that assigning a string to innerHTML or a
// similar sink throws instead of parsing markup. The one policy allowed
// is DOMPurify's ("dompurify"), which the Markdown renderer's sanitizer
// creates for the HTML it parses and cleans; no other policy can be
// created, so no other code can turn a string into markup.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types dompurify"

// Cache-Control values: the page is checked on every load, versioned
// assets never.
const (
	cachePage   = "no-cache"
	cacheAsset  = "public, max-age=31536000, immutable"
	cacheNone   = "no-store"
	placeholder = "{{assets}}" // in index.html: the relative URL of the assets folder
)

// contentTypes are the types of the embedded files, by extension. The
// handler does not ask the mime package: its table comes partly from the
// machine (and the Windows registry has served .js as text/plain).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// file is one response body, plain and (when it is smaller) gzipped.
type file struct {
	body, gz   []byte
	ctype      string
	etag, gzET string
}

// ui is the handler: the page and the assets of one version.
type ui struct {
	version string
	page    *file
	assets  map[string]*file // by name relative to static/
}

var load = sync.OnceValues(func() (*ui, error) { return build(static) })

// Handler returns the UI's http.Handler, for server.Options.UI. It serves
// GET and HEAD of / (the page) and of assets/<version>/<file>; any other
// path is 404 and any other method 405, as JSON errors shaped like the
// API's. It expects to be mounted at the root of the server's paths (use
// http.StripPrefix for a prefix).
func Handler() http.Handler {
	u, err := load()
	if err != nil {
		// The embedded files are fixed at build time and checked by the
		// package's tests: this cannot happen in a tested build.
		panic(err)
	}
	return u
}

// Version returns the version of the embedded assets: the first 16 hex
// digits of a SHA-256 over every file's name and content.
func Version() string {
	u, err := load()
	if err != nil {
		panic(err)
	}
	return u.version
}

// build reads every file of fsys's static folder and prepares its
// responses.
func build(fsys fs.FS) (*ui, error) {
	sub, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, err
	}
	raw := map[string][]byte{}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		raw[name] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	index, ok := raw["index.html"]
	if !ok {
		return nil, fmt.Errorf("web: static/index.html is missing")
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		// Length-prefixed, so that no two different sets hash alike.
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(raw[name]))
		h.Write(raw[name])
	}
	u := &ui{version: hex.EncodeToString(h.Sum(nil))[:16], assets: map[string]*file{}}
	for _, name := range names {
		if name == "index.html" {
			continue
		}
		f, err := newFile(name, raw[name])
		if err != nil {
			return nil, err
		}
		u.assets[name] = f
	}
	page := bytes.ReplaceAll(index, []byte(placeholder), []byte("assets/"+u.version+"/"))
	if u.page, err = newFile("index.html", page); err != nil {
		return nil, err
	}
	return u, nil
}

func newFile(name string, body []byte) (*file, error) {
	ctype, ok := contentTypes[path.Ext(name)]
	if !ok {
		return nil, fmt.Errorf("web: static/%s: no content type for %q files", name, path.Ext(name))
	}
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:])[:24]
	f := &file{body: body, ctype: ctype, etag: `"` + tag + `"`}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(body)
	zw.Close()
	// Worth it only when it saves more than the header costs.
	if buf.Len() < len(body)-64 {
		f.gz, f.gzET = buf.Bytes(), `"`+tag+`-gz"`
	}
	return f, nil
}

func (u *ui) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use GET, HEAD")
		return
	}
	p := r.URL.Path
	if p == "/" {
		u.serve(w, r, u.page, cachePage)
		return
	}
	if rest, ok := strings.CutPrefix(p, "/assets/"); ok {
		version, name, _ := strings.Cut(rest, "/")
		if f := u.assets[name]; f != nil && version == u.version {
			u.serve(w, r, f, cacheAsset)
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", "no such page")
}

// serve answers with f, gzipped when the client takes it; conditional
// and range requests are handled by http.ServeContent.
func (u *ui) serve(w http.ResponseWriter, r *http.Request, f *file, cache string) {
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("Cache-Control", cache)
	body, etag := f.body, f.etag
	if f.gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = f.gz, f.gzET
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip: listed
// (or "*") with a quality above zero.
func acceptsGzip(v string) bool {
	star := false
	for _, part := range strings.Split(v, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
					q = f
				}
			}
		}
		switch coding {
		case "gzip", "x-gzip":
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cacheNone)
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": msg}})
	w.Write(append(b, '\n'))
}
