// Package apicontract holds the server's tests to its OpenAPI document
// (server.OpenAPI): Record wraps a handler so that every response a test
// gets is checked against the document when the test ends (its status,
// content type and body schema; for an event stream, the data of every
// event against the schema the document names for that event), and
// Document validates the document itself with libopenapi-validator. A
// response the document does not describe fails the test, so the two
// cannot drift apart.
package apicontract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/spool-go/spool/server"
)

// contract is the parsed document, built once per test process.
type contract struct {
	model   *v3.Document
	v       validator.Validator
	schemas schema_validation.SchemaValidator
	raw     map[string]any // the document as JSON, for the x-spool-* extensions
	err     error
}

var (
	once   sync.Once
	loaded contract
	// mu serializes validation: the validator's caches are not all safe
	// for concurrent use, and tests run in parallel.
	mu sync.Mutex
)

func load() *contract {
	once.Do(func() {
		b := server.OpenAPI()
		doc, err := libopenapi.NewDocument(b)
		if err != nil {
			loaded.err = err
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			loaded.err = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			loaded.err = fmt.Errorf("building the validator: %v", errs)
			return
		}
		loaded.model, loaded.v = &m.Model, v
		loaded.schemas = schema_validation.NewSchemaValidator()
		loaded.err = json.Unmarshal(b, &loaded.raw)
	})
	return &loaded
}

// Document validates the OpenAPI document against the OpenAPI 3.1
// specification's own schema.
func Document(t testing.TB) *v3.Document {
	t.Helper()
	c := load()
	if c.err != nil {
		t.Fatalf("the OpenAPI document: %v", c.err)
	}
	mu.Lock()
	ok, errs := c.v.ValidateDocument()
	mu.Unlock()
	if !ok {
		for _, e := range errs {
			t.Errorf("the OpenAPI document is not valid: %s (%s)", e.Message, e.Reason)
		}
		t.FailNow()
	}
	return c.model
}

// exchange is one request a test made and the response it got.
type exchange struct {
	method  string
	url     *url.URL
	header  http.Header
	status  int
	rheader http.Header
	body    []byte
}

// Recorder checks the exchanges of one test.
type Recorder struct {
	t  testing.TB
	mu sync.Mutex
	xs []exchange
}

// Record returns h recording every exchange, checked against the document
// when t ends.
func Record(t testing.TB, h http.Handler) http.Handler {
	r := &Recorder{t: t}
	t.Cleanup(r.check)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cw := &captureWriter{ResponseWriter: w}
		x := exchange{method: req.Method, url: cloneURL(req.URL), header: req.Header.Clone()}
		h.ServeHTTP(cw, req)
		x.status, x.rheader, x.body = cw.status(), w.Header().Clone(), cw.buf.Bytes()
		r.mu.Lock()
		r.xs = append(r.xs, x)
		r.mu.Unlock()
	})
}

func cloneURL(u *url.URL) *url.URL {
	c := *u
	return &c
}

// check validates every exchange recorded.
func (r *Recorder) check() {
	c := load()
	if c.err != nil {
		r.t.Errorf("the OpenAPI document: %v", c.err)
		return
	}
	r.mu.Lock()
	xs := r.xs
	r.xs = nil
	r.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	for _, x := range xs {
		if problem := c.check(x); problem != "" {
			r.t.Errorf("the response to %s %s does not keep the OpenAPI document: %d %s %.300q\n%s",
				x.method, x.url.Path, x.status, x.rheader.Get("Content-Type"), x.body, problem)
		}
	}
}

// check returns what is wrong with x, or "".
func (c *contract) check(x exchange) string {
	req := &http.Request{Method: x.method, URL: x.url, Header: x.header, Host: "127.0.0.1"}
	if loc := x.rheader.Get("Location"); (x.status == http.StatusMovedPermanently || x.status == http.StatusTemporaryRedirect) &&
		loc != "" && strings.TrimSuffix(loc, "?"+x.url.RawQuery) == path.Clean(x.url.Path) {
		return "" // net/http's ServeMux sends an unclean path to its clean form
	}
	pathItem, _, template := paths.FindPath(req, c.model, nil)
	if pathItem == nil || template == "/" {
		switch {
		case isError(x.body) && (x.status == http.StatusNotFound || x.status == http.StatusUnauthorized || x.status == http.StatusForbidden):
			// A path the API does not have: 404, or the 401 or 403
			// that come before routing.
			return ""
		case x.method == http.MethodGet && !isError(x.body):
			return "" // the web UI (/ and its files), outside the API
		}
		return "the document has no such path"
	}
	if op := operation(pathItem, x.method); op == nil {
		// A method the route does not take: 405 naming those it does.
		if x.status == http.StatusMethodNotAllowed && x.rheader.Get("Allow") != "" && isError(x.body) {
			return ""
		}
		return "the document has no such operation"
	}
	res := &http.Response{StatusCode: x.status, Header: x.rheader, Body: io.NopCloser(bytes.NewReader(x.body)), Request: req}
	if ok, errs := c.v.ValidateHttpResponse(req, res); !ok {
		var b strings.Builder
		for _, e := range errs {
			fmt.Fprintf(&b, "  %s: %s\n", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				fmt.Fprintf(&b, "    at %s: %s\n", se.FieldPath, se.Reason)
			}
		}
		return b.String()
	}
	if strings.HasPrefix(x.rheader.Get("Content-Type"), "text/event-stream") {
		return c.checkEvents(template, x)
	}
	return ""
}

func operation(p *v3.PathItem, method string) *v3.Operation {
	switch method {
	case http.MethodGet, http.MethodHead:
		return p.Get
	case http.MethodPost:
		return p.Post
	case http.MethodDelete:
		return p.Delete
	case http.MethodPut:
		return p.Put
	case http.MethodPatch:
		return p.Patch
	}
	return nil
}

func isError(body []byte) bool {
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error.Code != "" && e.Error.Message != ""
}

// checkEvents checks each event of a stream against the schema the
// document's x-spool-events names for its event name ("message" for an
// event without one); x-spool-done is a data line that is not JSON and
// ends the stream.
func (c *contract) checkEvents(template string, x exchange) string {
	media, _ := dig(c.raw, "paths", template, strings.ToLower(x.method), "responses", strconv.Itoa(x.status), "content", "text/event-stream").(map[string]any)
	events, _ := media["x-spool-events"].(map[string]any)
	if events == nil {
		return "the document names no events for this stream (x-spool-events)"
	}
	done, _ := media["x-spool-done"].(string)
	var b strings.Builder
	n := 0
	for _, ev := range parseSSE(x.body) {
		n++
		name := ev.name
		if name == "" {
			name = "message"
		}
		if done != "" && ev.data == done {
			continue
		}
		schemaName, _ := events[name].(string)
		if schemaName == "" {
			fmt.Fprintf(&b, "  event %q is not in the document\n", name)
			continue
		}
		proxy := c.model.Components.Schemas.GetOrZero(schemaName)
		if proxy == nil {
			fmt.Fprintf(&b, "  event %q: no schema %s\n", name, schemaName)
			continue
		}
		if ok, errs := c.schemas.ValidateSchemaBytes(proxy.Schema(), []byte(ev.data)); !ok {
			fmt.Fprintf(&b, "  event %q (%s) %.200q:\n", name, schemaName, ev.data)
			for _, e := range errs {
				fmt.Fprintf(&b, "    %s: %s\n", e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					fmt.Fprintf(&b, "      at %s: %s\n", se.FieldPath, se.Reason)
				}
			}
		}
	}
	return b.String()
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

type sseEvent struct{ name, data string }

// parseSSE reads the events of a stream; comments are skipped.
func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || data != nil {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			cur.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// captureWriter keeps a copy of what a handler writes; Flush and Unwrap
// pass through, so event streams and http.ResponseController work as
// without it.
type captureWriter struct {
	http.ResponseWriter
	code int
	buf  bytes.Buffer
}

func (w *captureWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *captureWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
