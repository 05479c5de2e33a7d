package browsertest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/inspector"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// DefaultRunTimeout bounds how long RunWasm lets the tests run in the
// browser when the go test deadline does not bound it sooner.
const DefaultRunTimeout = 4 * time.Minute

// RunWasm compiles the tests of the package in directory dir to
// WebAssembly (go test -c with GOOS=js GOARCH=wasm), runs the binary with
// args and -test.v in a page of a new headless Chromium (NewBrowser), and
// fails t unless it exits with status 0.
//
// The binary's output goes to standard output as it arrives, each line
// prefixed with "wasm: " (so that go test's parser does not take its
// results for t's subtests): go test shows it with -v, and for a failed
// package always. t's log names the failed tests.
//
// The page loads wasm_exec.js from the Go installation that compiles the
// binary, gives the binary args through the Go object, and sends what the
// binary writes to standard output and error, and its exit status, to a
// server on loopback that lives as long as the call. It replaces the file
// system of wasm_exec.js (which has no files) with one in memory, so that
// examples, which the testing package runs through a temporary file, and
// tests that write files (not folders: t.TempDir fails) run too.
func RunWasm(t *testing.T, dir string, args ...string) {
	t.Helper()
	r := runWasm(t, dir, os.Stdout, args)
	summary := r.out.summary()
	switch {
	case r.status == "0":
		t.Logf("the wasm tests passed in Chromium: %s (compiled in %v, ran in %v)", summary, r.compiled.Round(time.Second), r.ran.Round(time.Second))
	case r.status == "":
		t.Errorf("the wasm tests did not finish: %s (the output so far is above, lines starting with \"wasm: \")", r.problem)
	case strings.HasPrefix(r.status, "error:"):
		t.Errorf("the page could not run the wasm test binary: %s", strings.TrimPrefix(r.status, "error: "))
	default:
		t.Errorf("the wasm tests failed in Chromium (exit status %s): %s; failed: %s (their output is above, lines starting with \"wasm: \")",
			r.status, summary, strings.Join(r.out.failed(), ", "))
	}
}

// wasmRun is how a run of a wasm test binary ended.
type wasmRun struct {
	// status is the binary's exit status ("0", "1", "2"), "error: …" when
	// the page could not run it, or empty when it did not finish.
	status        string
	problem       string // why it did not finish: a page error or the time limit
	out           *output
	compiled, ran time.Duration
}

// runWasm does the work of RunWasm, writing the binary's output to w. It
// fails t only when it cannot set the run up.
func runWasm(t *testing.T, dir string, w io.Writer, args []string) (r wasmRun) {
	t.Helper()
	Chromium(t) // skip before compiling when there is no browser
	budget := DefaultRunTimeout
	if d, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(d)-10*time.Second)
	}
	ctx, cancel := context.WithTimeout(t.Context(), budget)
	defer cancel()

	started := time.Now()
	bin, execJS := compileWasm(ctx, t, dir, t.TempDir())
	r = wasmRun{out: newOutput(w, "wasm: "), compiled: time.Since(started)}

	// The binary's own timeout comes first, so that a hang ends with its
	// goroutine dump rather than with the browser being closed.
	timeout := max(budget-r.compiled-20*time.Second, 10*time.Second)
	args = append([]string{"-test.v", fmt.Sprintf("-test.timeout=%v", timeout)}, args...)
	srv := newWasmServer(t, bin, execJS, args, r.out)
	url := srv.start(t)

	tab := NewBrowser(t)
	pageErr := make(chan string, 1)
	err := chromedp.Listen(tab, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			msg = "uncaught exception: " + ev.ExceptionDetails.Text
			if x := ev.ExceptionDetails.Exception; x != nil && x.Description != "" {
				msg += " " + x.Description
			}
		case *inspector.EventTargetCrashed:
			msg = "the page crashed"
		default:
			return
		}
		select {
		case pageErr <- msg:
		default:
		}
	})
	if err != nil {
		t.Fatalf("listen to the page's events: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load the test page: %v", err)
	}
	ran := time.Now()
	defer func() {
		r.ran = time.Since(ran)
		r.out.Close()
	}()
	select {
	case r.status = <-srv.exit:
		return r
	case r.problem = <-pageErr:
	case <-ctx.Done():
		r.problem = fmt.Sprintf("no exit status after %v", time.Since(ran).Round(time.Second))
		return r
	}
	// An exception can come just before the exit status, from a callback
	// into the program after it exited: the status decides.
	select {
	case r.status = <-srv.exit:
	case <-time.After(2 * time.Second):
	}
	return r
}

// compileWasm builds the test binary of the package in dir and returns its
// path and the path of the matching wasm_exec.js.
func compileWasm(ctx context.Context, t *testing.T, dir, work string) (bin, execJS string) {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts its own go first on PATH
	if err != nil {
		t.Fatalf("no go command to build the browser's test binary with: %v", err)
	}
	goroot, err := exec.CommandContext(ctx, goTool, "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(goroot))
	for _, p := range []string{"lib/wasm/wasm_exec.js", "misc/wasm/wasm_exec.js"} { // Go 1.24+, older
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			execJS = filepath.Join(root, p)
			break
		}
	}
	if execJS == "" {
		t.Fatalf("no wasm_exec.js in %s/lib/wasm or %s/misc/wasm", root, root)
	}
	bin = filepath.Join(work, "test.wasm")
	cmd := exec.CommandContext(ctx, goTool, "test", "-c", "-vet=off", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="+wasmGoFlags(os.Getenv("GOFLAGS")))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=js GOARCH=wasm go test -c in %s: %v\n%s", dir, err, out)
	}
	return bin, execJS
}

// wasmGoFlags drops from GOFLAGS what js/wasm cannot build with.
func wasmGoFlags(flags string) string {
	var keep []string
	for _, f := range strings.Fields(flags) {
		name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch name {
		case "race", "msan", "asan", "cover", "covermode", "coverpkg":
			continue
		}
		keep = append(keep, f)
	}
	return strings.Join(keep, " ")
}

// The page that runs the binary, and the file system it gives it
// (wasm_exec.js's own has no files, so examples could not run).
var (
	//go:embed wasm_page.html
	wasmPage string
	//go:embed wasm_fs.js
	wasmFS string
)

// wasmServer serves the test page, its file system, wasm_exec.js and the
// binary, and takes the binary's output and exit status.
type wasmServer struct {
	mux  *http.ServeMux
	out  *output
	exit chan string
}

func newWasmServer(t *testing.T, bin, execJS string, args []string, out *output) *wasmServer {
	config, err := json.Marshal(map[string]any{"args": args, "env": map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(wasmPage, "/*CONFIG*/", string(config), 1)
	s := &wasmServer{mux: http.NewServeMux(), out: out, exit: make(chan string, 1)}
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	})
	s.mux.HandleFunc("GET /fs.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		io.WriteString(w, wasmFS)
	})
	s.mux.HandleFunc("GET /wasm_exec.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeFile(w, r, execJS)
	})
	s.mux.HandleFunc("GET /test.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		http.ServeFile(w, r, bin)
	})
	s.mux.HandleFunc("POST /output", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(s.out, r.Body)
	})
	s.mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		select {
		case s.exit <- string(b):
		default:
		}
	})
	s.mux.HandleFunc("GET /favicon.ico", http.NotFound)
	return s
}

// start serves on a loopback port until the test ends and returns the
// page's URL.
func (s *wasmServer) start(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return "http://" + l.Addr().String() + "/"
}

// output copies the binary's output to w line by line with a prefix, and
// keeps the test results it reports.
type output struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
	results map[string][]string // "PASS", "FAIL", "SKIP" -> test names
}

func newOutput(w io.Writer, prefix string) *output {
	return &output{w: w, prefix: prefix, results: map[string][]string{}}
}

var resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		o.line(o.partial[:i])
		o.partial = o.partial[i+1:]
	}
}

// Close writes a last line that has no newline.
func (o *output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.partial) > 0 {
		o.line(o.partial)
		o.partial = nil
	}
	return nil
}

func (o *output) line(l []byte) {
	fmt.Fprintf(o.w, "%s%s\n", o.prefix, l)
	if m := resultLine.FindSubmatch(l); m != nil {
		o.results[string(m[1])] = append(o.results[string(m[1])], string(m[2]))
	}
}

// summary counts the results, subtests included.
func (o *output) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprintf("%d passed, %d failed, %d skipped (tests and subtests)",
		len(o.results["PASS"]), len(o.results["FAIL"]), len(o.results["SKIP"]))
}

// failed returns the tests reported failed, or a note when none was (a
// panic or a timeout ends the binary before it reports).
func (o *output) failed() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.results["FAIL"]) == 0 {
		return []string{"none reported (a panic or timeout?)"}
	}
	return o.results["FAIL"]
}
