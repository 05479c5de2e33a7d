package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spool-go/spool/internal/browsertest"
	"github.com/spool-go/spool/internal/spooltest"
)

var update = flag.Bool("update", false, "copy the README screenshot of the UI to docs/screenshot.png")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(spooltest.Main(m))
}

// spoolServer is a running spool serve.
type spoolServer struct {
	URL string
	key string // the API key the tests' own requests send, if any
}

// startServe starts spool serve with the echo model and a file store in
// a temporary folder on a free loopback port, and waits until it listens.
// The process is stopped with SIGINT when the test ends (killed if it
// lingers).
func startServe(t *testing.T, key string, args ...string) *spoolServer {
	t.Helper()
	all := []string{"--store", "file:" + t.TempDir(), "--model", "echo", "--grace", "2s"}
	if key != "" {
		all = append(all, "--api-key", key)
	}
	p := spooltest.Serve(t, spooltest.Options{}, append(all, args...)...)
	return &spoolServer{URL: p.URL, key: key}
}

// do sends an API request as a test client and returns the status and
// body.
func (s *spoolServer) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// invoke runs one turn through POST /invoke.
func (s *spoolServer) invoke(t *testing.T, session, prompt string) {
	t.Helper()
	if code, b := s.do(t, "POST", "/invoke", map[string]string{"sessionId": session, "prompt": prompt}); code != 200 {
		t.Fatalf("invoke %s: %d %s", session, code, b)
	}
}

// answers returns the texts of a session's assistant messages with text,
// oldest first, as the transcript holds them.
func (s *spoolServer) answers(t *testing.T, session string) []string {
	t.Helper()
	code, b := s.do(t, "GET", "/v1/sessions/"+session+"/messages?order=asc&limit=1000", nil)
	if code != 200 {
		t.Fatalf("messages of %s: %d %s", session, code, b)
	}
	var page struct {
		Messages []struct{ Role, Text string }
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Messages {
		if m.Role == "assistant" && m.Text != "" {
			out = append(out, m.Text)
		}
	}
	return out
}

// decideAll answers every pending approval of a session ("allow" or
// "deny") through the API.
func (s *spoolServer) decideAll(t *testing.T, session, decision string) {
	t.Helper()
	code, body := s.do(t, "GET", "/v1/sessions/"+session+"/approvals", nil)
	var p struct{ Approvals []struct{ ID string } }
	if err := json.Unmarshal(body, &p); code != 200 || err != nil || len(p.Approvals) == 0 {
		t.Fatalf("approvals of %s: %d %s", session, code, body)
	}
	for _, a := range p.Approvals {
		if code, body := s.do(t, "POST", "/v1/sessions/"+session+"/approvals/"+a.ID, map[string]string{"decision": decision}); code != 200 {
			t.Fatalf("%s %s: %d %s", decision, a.ID, code, body)
		}
	}
}

// historyLen is the number of messages the next request of a session
// carries.
func (s *spoolServer) historyLen(t *testing.T, session string) int {
	t.Helper()
	code, body := s.do(t, "GET", "/v1/sessions/"+session+"/history", nil)
	var h struct{ Messages []json.RawMessage }
	if err := json.Unmarshal(body, &h); code != 200 || err != nil {
		t.Fatalf("history of %s: %d %s", session, code, body)
	}
	return len(h.Messages)
}

// sessionIDs lists the ids of every session, newest first.
func (s *spoolServer) sessionIDs(t *testing.T) []string {
	t.Helper()
	code, b := s.do(t, "GET", "/v1/sessions?limit=1000", nil)
	if code != 200 {
		t.Fatalf("list: %d %s", code, b)
	}
	var page struct {
		Sessions []struct{ ID string }
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range page.Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// stepTimeout bounds each browser step; generous, for a loaded machine.
const stepTimeout = 30 * time.Second

// tab is a browser tab of one test.
type tab struct {
	t      *testing.T
	ctx    context.Context
	mobile bool // a phone: Enter starts a new line, the button sends

	mu          sync.Mutex
	problems    []string // uncaught exceptions and console errors of the page
	failedLoads []string // requests that failed, logged when the test fails
}

// newTab opens a tab of browser with the given viewport. Uncaught
// exceptions and errors the page logs (failed requests aside) fail the
// test when it ends.
func newTab(t *testing.T, browser context.Context, width, height int64, mobile bool) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	tb := &tab{t: t, ctx: ctx, mobile: mobile}
	t.Cleanup(func() {
		cancel()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("page: %s", p)
		}
		if t.Failed() {
			for _, f := range tb.failedLoads {
				t.Logf("failed request: %s", f)
			}
		}
	})
	if err := chromedp.Listen(ctx, tb.listen); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable the log: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable network events: %v", err)
	}
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulateScale(2))
	}
	tb.do(chromedp.EmulateViewport(width, height, opts...))
	return tb
}

func (tb *tab) listen(ev any) {
	var p string
	switch ev := ev.(type) {
	case *cdpruntime.EventExceptionThrown:
		d := ev.ExceptionDetails
		p = "uncaught: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			p += " " + d.Exception.Description
		}
	case *network.EventLoadingFailed:
		tb.mu.Lock()
		tb.failedLoads = append(tb.failedLoads, fmt.Sprintf("%s %s canceled=%v blocked=%s", ev.Type, ev.ErrorText, ev.Canceled, ev.BlockedReason))
		tb.mu.Unlock()
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		// Failed requests (401s, 404s the tests cause) are logged by the
		// network source; they are expected.
		if e.Level == cdplog.EntryLevelError && e.Source != cdplog.EntrySourceNetwork {
			p = fmt.Sprintf("%s error: %s (%s:%d)", e.Source, e.Text, e.URL, e.LineNumber)
		}
	case *cdpruntime.EventConsoleAPICalled:
		if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, a.Description+string(a.Value))
			}
			p = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
		}
	}
	if p != "" {
		tb.mu.Lock()
		tb.problems = append(tb.problems, p)
		tb.mu.Unlock()
	}
}

// do runs actions, failing the test on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// retype replaces the text of the input with id by text, as typed. The
// old text goes through the value property, not chromedp.Clear: Clear
// sets the node's value attribute, and chromedp (v0.23.0) SendKeys reads
// a node's attributes outside the node's lock while the DOM event of that
// change writes them, a data race under -race.
func (tb *tab) retype(id, text string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(document.getElementById(%q).value = '', true)`, id))
	tb.do(chromedp.SendKeys(chromedp.ID(id), text))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is true. (chromedp's Poll
// compiles its predicate with new Function, which the page's CSP
// forbids; evaluating through DevTools is allowed.)
func (tb *tab) waitFor(what, cond string) {
	tb.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			tb.shot("timeout")
			if err != nil {
				tb.t.Fatalf("waiting for %s: %v", what, err)
			}
			tb.t.Fatalf("waiting for %s: not after %v (%s); the page: %s", what, stepTimeout, cond, tb.where())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// where says where the page is, for a failure's message: its route, the
// focused element and whether a turn runs.
func (tb *tab) where() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(e => 'route ' + location.hash + ', focus ' + (e ? e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + String(e.className).trim().split(/\s+/).join('.') : '') : 'none') + ', running ' + document.getElementById('app')?.dataset.running)(document.activeElement)`))
	if err != nil {
		return err.Error()
	}
	return s
}

// poll evaluates a JavaScript expression until it gives a non-empty
// string, and returns that.
func (tb *tab) poll(what, expr string) string {
	tb.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		cancel()
		if err == nil && v != "" {
			return v
		}
		if time.Now().After(deadline) {
			tb.shot("timeout")
			tb.t.Fatalf("waiting for %s: %v (%s)", what, err, expr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// text returns the textContent of the first element matching a CSS
// selector, or "" when there is none.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel))
}

// count returns the number of elements matching a CSS selector.
func (tb *tab) count(sel string) int {
	tb.t.Helper()
	return eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// shot saves a screenshot of the viewport as name.png among the test's
// artifacts and returns the path.
func (tb *tab) shot(name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(artifactDir(tb.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	tb.t.Logf("screenshot: %s", path)
	return path
}

var artifactDirs sync.Map // *testing.T → directory, while the test runs

// artifactDir is where a test's screenshots go: $SPOOL_ARTIFACTS/<test>
// when that is set, else the test's ArtifactDir (kept with go test
// -artifacts, removed after the test otherwise). It is remembered per
// test run, not per test name: a second run of the test (go test
// -count=2) gets a directory of its own, not the first run's, which is
// gone.
func artifactDir(t *testing.T) string {
	if d, ok := artifactDirs.Load(t); ok {
		return d.(string)
	}
	var dir string
	if root := os.Getenv("SPOOL_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		dir = t.ArtifactDir()
	}
	artifactDirs.Store(t, dir)
	t.Cleanup(func() { artifactDirs.Delete(t) })
	return dir
}

// browser starts Chromium for the tests of t, or skips them (see
// browsertest).
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests are skipped with -short")
	}
	browsertest.Chromium(t)
	spooltest.Binary(t)
	return browsertest.NewBrowser(t)
}

// slowProxy serves upstream through a reverse proxy that holds each
// Server-Sent Event back by delay, at the pace of a slow model (spool
// serve's echo model answers at once, and it has no option to slow it),
// so that a test can watch an answer grow. With cutAfter > 0 it breaks
// every event stream off after that many events, as a dropped
// connection would. Everything else passes as is.
func slowProxy(t *testing.T, upstream string, delay time.Duration, cutAfter int) string {
	t.Helper()
	slow := func(res *http.Response) error {
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			res.Body = &slowEvents{r: bufio.NewReader(res.Body), body: res.Body, delay: delay, left: cutAfter}
		}
		return nil
	}
	return proxyTo(t, upstream, slow, nil).URL
}

// proxyTo serves upstream through a reverse proxy that passes each
// response on as it is read, through modify when it is not nil. handle,
// when not nil, sees each request first, and passes it on with next or
// answers it itself.
func proxyTo(t *testing.T, upstream string, modify func(*http.Response) error, handle func(w http.ResponseWriter, r *http.Request, next http.Handler)) *httptest.Server {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // pass each event on as soon as it is read
	rp.ModifyResponse = modify
	errs := &spooltest.Buffer{}
	rp.ErrorLog = log.New(errs, "", 0)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy errors:\n%s", errs)
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request body before forwarding it: the proxy flushes
		// the response header at once, after which a server's HTTP/1
		// request body may be gone while the transport still reads it
		// (it then closes the upstream connection mid-stream).
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if handle != nil {
			handle(w, r, rp)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// A page's follow stream (?follow=1) never ends on its own, and
		// the tab may still be open: close the connections first, or
		// Close would wait for it.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// slowEvents reads an event stream one event at a time, waiting before
// each.
type slowEvents struct {
	r     *bufio.Reader
	body  io.ReadCloser
	delay time.Duration
	left  int // events to pass before breaking off; 0 for all
	buf   []byte
	err   error
}

func (s *slowEvents) Read(p []byte) (int, error) {
	if len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.left < 0 {
			// The proxy answers a failed copy by aborting the response:
			// the client sees the connection drop mid-stream.
			s.err = io.ErrUnexpectedEOF
			return 0, s.err
		}
		if s.left > 0 {
			if s.left--; s.left == 0 {
				s.left = -1
			}
		}
		for {
			line, err := s.r.ReadBytes('\n')
			s.buf = append(s.buf, line...)
			if err != nil {
				s.err = err
				break
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break // the blank line that ends an event
			}
		}
		time.Sleep(s.delay)
		if len(s.buf) == 0 {
			return 0, s.err
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

func (s *slowEvents) Close() error { return s.body.Close() }
