// Package usechat_test builds the example app (npm ci, then its build
// script: esbuild), serves it with its serve.mjs against a real spool
// serve, and drives it in headless Chromium the way a person does: send
// and watch the answer stream, approve a tool call, reload the page and
// find the conversation as it was (the app loads GET /api/chat/{id}),
// regenerate an answer. Screenshots at desktop and phone sizes go to
// $SPOOL_ARTIFACTS/<test> when that is set, else to the test's
// ArtifactDir (kept with go test -artifacts).
//
// It needs node, npm and Chromium: without them it skips, except under
// CI=true. The packages are installed once into this folder's
// node_modules (npm ci again only when package-lock.json changes); the
// build goes to dist/. Both are ignored by git.
package usechat_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/spool-go/spool/internal/browsertest"
	"github.com/spool-go/spool/internal/spooltest"
)

func TestMain(m *testing.M) { os.Exit(spooltest.Main(m)) }

// tool finds a program the test needs, or skips (fails under CI=true).
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is missing", name)
		}
		t.Skipf("%s not found: skipped", name)
	}
	return p
}

// run runs a command in this folder, failing t with its output.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// build installs the locked packages when node_modules does not hold
// them yet, and builds dist/app.js.
func build(t *testing.T) {
	t.Helper()
	npm := tool(t, "npm")
	lock, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	stamp := filepath.Join("node_modules", ".spool-lock-sha256")
	if b, _ := os.ReadFile(stamp); string(b) != hex.EncodeToString(sum[:]) {
		run(t, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		if err := os.WriteFile(stamp, []byte(hex.EncodeToString(sum[:])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, npm, "run", "--silent", "build")
}

var listeningRE = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)

// serveApp starts serve.mjs against spool at upstream and returns its
// address; the test's end stops it.
func serveApp(t *testing.T, node, upstream string) string {
	t.Helper()
	cmd := exec.Command(node, "serve.mjs")
	cmd.Env = append(os.Environ(), "SPOOL_URL="+upstream, "PORT=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := listeningRE.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("serve.mjs printed %q: %v", line, err)
	}
	return m[1]
}

// page is the app in a browser tab.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors
}

func newPage(t *testing.T, browser context.Context) *page {
	p := &page{t: t, ctx: browser, dir: artifactDir(t)}
	err := chromedp.Listen(browser, func(ev any) {
		var problem string
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			problem = "uncaught: " + ev.ExceptionDetails.Text
			if d := ev.ExceptionDetails.Exception; d != nil {
				problem += " " + d.Description
			}
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError {
				problem = "console.error"
				for _, a := range ev.Args {
					problem += " " + a.Description + string(a.Value)
				}
			}
		}
		if problem != "" {
			p.mu.Lock()
			p.problems = append(p.problems, problem)
			p.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("listen to the page: %v", err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, problem := range p.problems {
			t.Errorf("page: %s", problem)
		}
	})
	return p
}

const stepTimeout = 30 * time.Second

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds.
func (p *page) waitFor(what, cond string) {
	p.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for !eval[bool](p, "!!("+cond+")") {
		if time.Now().After(deadline) {
			p.screenshot("timeout", 1280, 800)
			p.t.Fatalf("waiting for %s: not after %v (%s)\n%s", what, stepTimeout, cond, eval[string](p, "document.body.innerHTML"))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// send types text into the message box and presses Send, then waits until
// the answer has streamed to its end (or paused on an approval).
func (p *page) send(text string) {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.ID("send")), chromedp.SendKeys(chromedp.ID("prompt"), text), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the question to show", fmt.Sprintf(`[...document.querySelectorAll('.msg.user')].at(-1)?.textContent === %q`, text))
	p.settle()
}

// settle waits until the newest message is an answer and no request runs.
func (p *page) settle() {
	p.t.Helper()
	p.waitFor("the answer to end", `document.querySelector('.msg:last-child')?.classList.contains('assistant') && document.querySelector('main').dataset.status === 'ready'`)
}

// messages returns the chat as "role id: text" lines.
func (p *page) messages() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll('.msg')].map(m => (m.classList.contains('user') ? 'user' : 'assistant') + ' ' + m.dataset.id + ': ' + m.textContent)`)
}

func (p *page) screenshot(name string, w, h int64) {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(w, h))
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(p.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", path)
}

func artifactDir(t *testing.T) string {
	if root := os.Getenv("SPOOL_ARTIFACTS"); root != "" {
		dir := filepath.Join(root, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// TestUseChatApp: the example app, built from its lock file, in Chromium
// against spool serve.
func TestUseChatApp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the example with npm and runs Chromium")
	}
	node := tool(t, "node")
	browsertest.Chromium(t)
	build(t)
	spool := spooltest.Serve(t, spooltest.Options{}, "--store", "file:"+t.TempDir(), "--model", "echo")
	app := serveApp(t, node, spool.URL)
	p := newPage(t, browsertest.NewBrowser(t))
	const chat = "usechat-e2e"
	p.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(app+"/?chat="+chat))

	// Send: the answer streams in (the chat goes through "streaming").
	p.do(chromedp.WaitVisible(chromedp.ID("send")))
	eval[bool](p, `(() => { const m = document.querySelector('main'); window.statuses = []; new MutationObserver(() => statuses.push(m.dataset.status)).observe(m, {attributes: true}); return true })()`)
	p.send("hello from the browser")
	if got := eval[[]string](p, `statuses`); !slices.Contains(got, "streaming") {
		t.Fatalf("the chat went through %v, never streaming", got)
	}
	p.waitFor("the answer", `document.querySelector('.msg.assistant .text')?.textContent === 'echo: hello from the browser'`)
	p.waitFor("the answer's metadata", `/^echo · \d+ in \/ \d+ out tokens · \d+ ms$/.test(document.querySelector('.msg.assistant .meta')?.textContent)`)

	// Approve a tool call: the turn resumes in the same message.
	p.send(`/call save_note {"text":"milk"}`)
	p.waitFor("the approval buttons", `document.querySelector('.tool[data-state="approval-requested"] .allow')`)
	if eval[bool](p, `!!document.getElementById('regenerate')`) {
		t.Fatal("Regenerate is offered while the answer waits on an approval")
	}
	p.screenshot("approval-desktop", 1280, 800)
	p.do(chromedp.Click(chromedp.CSS(".tool .allow")))
	p.waitFor("the tool's result", `document.querySelector('.tool[data-state="output-available"]')?.textContent.includes('saved note: milk')`)
	p.settle()
	p.waitFor("the resumed answer", `[...document.querySelectorAll('.msg.assistant')].at(-1)?.textContent.includes('tool save_note returned: saved note: milk')`)
	before := p.messages()
	if len(before) != 4 {
		t.Fatalf("%d messages after the approval, want 4:\n%s", len(before), strings.Join(before, "\n"))
	}
	p.screenshot("chat-desktop", 1280, 800)

	// Reload: the app loads the stored conversation, the same answers
	// under the same ids the stream gave them.
	p.do(chromedp.Reload())
	p.waitFor("the stored messages", `document.querySelectorAll('.msg').length === 4`)
	after := p.messages()
	for i := range before {
		if strings.HasPrefix(before[i], "user") {
			before[i], after[i] = userText(before[i]), userText(after[i]) // the client made the ids of its questions
		}
		if before[i] != after[i] {
			t.Fatalf("after the reload, message %d is\n  %s\nwas\n  %s", i, after[i], before[i])
		}
	}
	p.screenshot("reloaded-phone", 390, 844)

	// Regenerate the newest answer: a new version, the old one kept as a
	// branch of the session.
	p.do(chromedp.EmulateViewport(1280, 800), chromedp.Click(chromedp.ID("regenerate")))
	p.waitFor("the regenerated answer", fmt.Sprintf(`(() => { const a = [...document.querySelectorAll('.msg.assistant')].at(-1); return a && a.dataset.id !== %q && document.querySelector('main').dataset.status === 'ready' })()`, strings.Fields(before[3])[1]))
	var versions struct {
		Messages []struct {
			Role       string
			Superseded bool
		}
	}
	res, err := http.Get(spool.URL + "/v1/sessions/" + chat + "/messages?branches=all&order=asc")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&versions); err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, m := range versions.Messages {
		if m.Superseded {
			superseded++
		}
	}
	if superseded == 0 {
		t.Fatalf("regenerate left no superseded turn: %+v", versions)
	}
	p.screenshot("regenerated-phone", 390, 844)
	p.screenshot("regenerated-desktop", 1280, 800)
}

// userText drops the id from a "user id: text" line.
func userText(line string) string {
	_, text, _ := strings.Cut(line, ": ")
	return "user: " + text
}
