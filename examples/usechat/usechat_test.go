// Package usechat_test builds the example app (npm ci, then its build
// script: esbuild), serves it with its serve.mjs against a real spool
// serve, and drives it in headless Chromium the way a person does: send
// and watch the answer stream, approve a tool call, reload the page and
// find the conversation as it was (the app loads GET /api/chat/{id}),
// regenerate an answer, reload mid-answer to see it resume, and stop an
// answer (the turn ends on the server). Screenshots at desktop and phone sizes go to
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

	cdppage "github.com/chromedp/cdproto/page"
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

	// Reload: the app loads the stored conversation, the same messages
	// under the same ids: the answers' the stream gave them, the
	// questions' the client made.
	p.do(chromedp.Reload())
	p.waitFor("the stored messages", `document.querySelectorAll('.msg').length === 4`)
	after := p.messages()
	for i := range before {
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

// recorder is run in the page before its own scripts, on every load: it
// notes each fetch the page makes with its status, and every text the
// newest answer shows, so that the test sees what happened right after a
// reload, before it could have asked.
const recorder = `
window.fetches = [];
const fetch0 = window.fetch;
window.fetch = async (...args) => {
  const url = String(args[0] && args[0].url || args[0]);
  const res = await fetch0(...args);
  fetches.push(res.status + ' ' + new URL(url, location.href).pathname);
  return res;
};
window.answerTexts = [];
new MutationObserver(() => {
  const t = [...document.querySelectorAll('.msg.assistant .text')].at(-1)?.textContent;
  if (t !== undefined && answerTexts.at(-1) !== t) answerTexts.push(t);
}).observe(document, {subtree: true, childList: true, characterData: true});
`

// TestUseChatResume: a reload while an answer streams. The app uses
// useChat({resume: true}), so the new page asks GET /api/chat/{id}/stream
// for the running answer and shows it growing to its end, which is the
// stored answer. The served echo model is slowed with the spec
// "echo:?delay=100ms" so that the reload lands mid-answer.
func TestUseChatResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the example with npm and runs Chromium")
	}
	node := tool(t, "node")
	browsertest.Chromium(t)
	build(t)
	spool := spooltest.Serve(t, spooltest.Options{}, "--store", "file:"+t.TempDir(), "--model", "echo:?delay=100ms")
	app := serveApp(t, node, spool.URL)
	browser := browsertest.NewBrowser(t)
	p := newPage(t, browser)
	if _, err := chromedp.Call(browser, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: recorder}); err != nil {
		t.Fatalf("add the recorder: %v", err)
	}
	const chat = "usechat-resume"
	p.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(app+"/?chat="+chat))

	// An answer of 60 words at 100ms a word: a few words in, reload.
	words := make([]string, 60)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i+1)
	}
	question := strings.Join(words, " ")
	p.do(chromedp.WaitVisible(chromedp.ID("send")), chromedp.SendKeys(chromedp.ID("prompt"), question), chromedp.Click(chromedp.ID("send")))
	p.waitFor("a few words of the answer", `[...document.querySelectorAll('.msg.assistant .text')].at(-1)?.textContent.includes('w3')`)
	answerID := eval[string](p, `[...document.querySelectorAll('.msg.assistant')].at(-1).dataset.id`)
	p.do(chromedp.Reload())

	// The new page resumes: it shows part of the answer, still streaming.
	p.waitFor("the resumed answer streaming", `document.querySelector('main')?.dataset.status === 'streaming' && !!document.querySelector('.msg.assistant .text')`)
	p.screenshot("resuming-desktop", 1280, 800)
	p.settle()
	p.screenshot("resumed-phone", 390, 844)
	p.screenshot("resumed-desktop", 1280, 800)

	want := "echo: " + question
	msgs := p.messages()
	if len(msgs) != 2 || msgs[1] != "assistant "+answerID+": "+want+metaText(p) {
		t.Fatalf("after the resume the page shows\n%s\nwant the answer %s: %q", strings.Join(msgs, "\n"), answerID, want)
	}
	fetches := eval[[]string](p, `fetches`)
	if !slices.Contains(fetches, "200 /api/chat/"+chat+"/stream") {
		t.Fatalf("the reloaded page fetched %v: no 200 from GET /api/chat/%s/stream", fetches, chat)
	}
	// The page showed the answer partly and then whole: it resumed
	// mid-answer rather than loading a finished one.
	texts := eval[[]string](p, `answerTexts`)
	partial := false
	for _, s := range texts {
		if s != want && strings.HasPrefix(want, s) && strings.Contains(s, "w1") {
			partial = true
		}
		if !strings.HasPrefix(want, s) {
			t.Fatalf("the resumed page showed %q, not a part of %q (all: %q)", s, want, texts)
		}
	}
	if !partial || texts[len(texts)-1] != want {
		t.Fatalf("the resumed page showed %q: want parts of the answer, then all of it", texts)
	}

	// It ends with the stored answer: GET /api/chat/{id}.
	var stored struct {
		Messages []struct {
			ID       string
			Role     string
			Parts    []struct{ Type, Text string }
			Metadata struct{ Status string }
		}
	}
	res, err := http.Get(spool.URL + "/api/chat/" + chat)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Messages) != 2 {
		t.Fatalf("stored %d messages, want 2: %+v", len(stored.Messages), stored)
	}
	last := stored.Messages[1]
	var text strings.Builder
	for _, part := range last.Parts {
		if part.Type == "text" {
			text.WriteString(part.Text)
		}
	}
	if last.ID != answerID || text.String() != want || last.Metadata.Status != "ok" {
		t.Fatalf("stored answer %s %q (status %q), want %s %q ok", last.ID, text.String(), last.Metadata.Status, answerID, want)
	}

	// Stop, a few words into the next answer: the turn ends on the
	// server too, recorded cancelled, not only this page's request.
	p.do(chromedp.SendKeys(chromedp.ID("prompt"), question), chromedp.Click(chromedp.ID("send")))
	p.waitFor("a few words of the next answer", `document.querySelectorAll('.msg.assistant').length === 2 && [...document.querySelectorAll('.msg.assistant .text')].at(-1)?.textContent.includes('w3')`)
	p.do(chromedp.Click(chromedp.ID("stop")))
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(spool.URL + "/api/chat/" + chat + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNoContent {
			break // nothing runs
		}
		if time.Now().After(deadline) {
			t.Fatal("the stopped turn still runs")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err = http.Get(spool.URL + "/api/chat/" + chat)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&stored); err != nil {
		t.Fatal(err)
	}
	if n := len(stored.Messages); n != 4 || stored.Messages[3].Metadata.Status != "cancelled" {
		t.Fatalf("after Stop the chat stored %d messages, the last %+v; want 4, the last cancelled", n, stored.Messages[n-1])
	}
}

// metaText is the metadata line under the newest answer.
func metaText(p *page) string {
	p.t.Helper()
	return eval[string](p, `[...document.querySelectorAll('.msg.assistant')].at(-1).querySelector('.meta')?.textContent ?? ''`)
}
