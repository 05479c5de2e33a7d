package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/transcript"
)

func TestChatPiped(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, out, errs := c.run("hello there\n/history\n/quit\n", "chat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "using the offline echo model") {
		t.Fatalf("the default model is not announced: %q", errs)
	}
	for _, want := range []string{"echo: hello there", "user: hello there", "assistant: echo: hello there"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	// The banner is not an answer: it goes to stderr.
	if !strings.Contains(errs, "session ses_") || strings.Contains(out, "session ses_") {
		t.Fatalf("the banner is not on stderr alone:\nstdout %q\nstderr %q", out, errs)
	}
}

// A bad argument to /open or /mode is said in the chat's words, naming
// the command, not in the store's or the library's ("store: invalid key",
// "spool: unknown tool mode"); the chat goes on.
func TestChatBadCommandArguments(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, out, errs := c.run("/open ../x\n/mode sometimes\nhello\n", "chat")
	if code != 1 || !strings.Contains(errs, "2 command(s) failed") { // piped: a failed command is a failure
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`session id "../x": use 1-128 of`, `/mode "sometimes": use /mode ask, /mode auto or /mode off`} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "store: invalid") || strings.Contains(errs, "spool: unknown") {
		t.Errorf("a library's words reached the chat:\n%s", errs)
	}
	if !strings.Contains(out, "hello") {
		t.Errorf("the chat did not go on to answer:\n%s", out)
	}
}

func TestChatApprovals(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	in := strings.Join([]string{
		`/call save_note {"text":"buy milk"}`, "maybe", "y",
		`/call save_note {"text":"call mum"}`, "n",
		`/call save_note {"text":"one"}`, "a",
		`/call save_note {"text":"two"}`,
		"/mode off",
		`/call save_note {"text":"three"}`,
	}, "\n")
	code, out, errs := c.run(in, "chat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, `allow save_note {"text":"buy milk"}?`) {
		t.Fatalf("the question is not on stderr:\n%s", errs)
	}
	for _, want := range []string{
		"tool save_note returned: saved note: buy milk",
		"the user denied this call",
		"saved note: one",
		"saved note: two",
		"tool mode off",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(errs, "allow save_note") != 4 { // buy milk twice (after "maybe"), call mum, one
		t.Fatalf("asked %d times:\n%s", strings.Count(errs, "allow save_note"), errs)
	}
	if !strings.Contains(errs, `not sent: "maybe"`) {
		t.Fatalf("the line typed at the question is dropped without a word:\n%s", errs)
	}
	if strings.Contains(out, "saved note: three") {
		t.Fatalf("tool ran in mode off:\n%s", out)
	}
}

// blockingModel answers "partial" and then waits until its request is
// cancelled; after that it answers like echo.
type blockingModel struct {
	started chan struct{}
	once    sync.Once
}

func (m *blockingModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	first := false
	m.once.Do(func() { first = true })
	if !first {
		return echo.New().Stream(ctx, req)
	}
	return func(yield func(model.Event, error) bool) {
		if !yield(model.Event{Kind: model.EventText, Text: "partial"}, nil) {
			return
		}
		close(m.started)
		<-ctx.Done()
		yield(model.Event{}, ctx.Err())
	}
}

func TestChatCtrlCStopsTheTurnNotTheProgram(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	m := &blockingModel{started: make(chan struct{})}
	c.model = m
	go func() {
		<-m.started
		c.sig <- os.Interrupt // Ctrl-C while the answer streams
	}()
	code, out, errs := c.run("first prompt\nsecond prompt\n", "chat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "partial\n") || !strings.Contains(errs, "(stopped)") {
		t.Fatalf("the turn was not stopped:\n%s\n%s", out, errs)
	}
	if !strings.Contains(out, "echo: second prompt") {
		t.Fatalf("the program did not go on after Ctrl-C:\n%s", out)
	}
}

func TestChatBadFlags(t *testing.T) {
	c := newCLI(t, nil)
	if code, _, _ := c.run("", "chat", "--continue", "--session", "x"); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if code, _, _ := c.run("", "chat", "--model", "nosuch:thing"); code != 2 {
		t.Fatalf("unknown provider: exit %d, want 2", code)
	}
	if code, _, _ := c.run("", "chat", "--bogus"); code != 2 {
		t.Fatalf("unknown flag: exit %d, want 2", code)
	}
	if code, _, _ := c.run("", "nosuchcommand"); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
}

func TestChatTooLongLineFails(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, _, errs := c.run("hello\n"+strings.Repeat("x", maxPromptLine+1)+"\nnever read\n", "chat")
	if code != 1 || !strings.Contains(errs, "longer than 16 MiB") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// Piped, chat is a filter: answers on stdout and nothing else; banner and
// notices on stderr; a failed turn or input that ends with an approval
// pending, or a command failed, exits 1.
func TestChatPipedIsScriptable(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, out, errs := c.run("hello\nbye\n", "chat")
	if code != 0 || out != "echo: hello\necho: bye\n" {
		t.Fatalf("exit %d, stdout %q (want the two answers alone); stderr %q", code, out, errs)
	}

	code, out, errs = c.run("hello\n/call save_note {\"text\":\"x\"}\n", "chat")
	if code != 1 || !strings.Contains(errs, "input ended with an approval pending") {
		t.Fatalf("ending with an approval pending: exit %d, stderr %q", code, errs)
	}
	if strings.Contains(out, "allow save_note") {
		t.Fatalf("the question went to stdout: %q", out)
	}

	// A command that fails (here /retry before any question) is a
	// failure too: a script that runs one learns it did not happen.
	code, out, errs = c.run("/retry\nhello\n", "chat")
	if code != 1 || out != "echo: hello\n" || !strings.Contains(errs, "1 command(s) failed") {
		t.Fatalf("a failed command: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	c.model = echo.New(echo.WithError(errors.New("the provider is down")))
	code, _, errs = c.run("hello\n", "chat")
	if code != 1 || !strings.Contains(errs, "the provider is down") || !strings.Contains(errs, "1 turn(s) failed") {
		t.Fatalf("a failed turn: exit %d, stderr %q", code, errs)
	}
}

// /retry before any question says so, naming the command, as /edit does;
// it said "spool: no such turn: session default/ses_… has no turn to
// regenerate".
func TestChatRetryWithoutQuestion(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, out, errs := c.run("/retry\nhello\n/retry\n", "chat")
	if code != 1 || !strings.Contains(errs, "error: /retry: this session has no question yet\n") {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	if strings.Count(out, "echo: hello") != 2 {
		t.Errorf("/retry after a question did not answer it again:\n%s", out)
	}
}

// A session opened again recaps its newest messages; an assistant step
// that only called a tool is shown by its call, not as a blank line.
func TestChatResumeRecapsToolCalls(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "file:" + filepath.Join(t.TempDir(), "s")})
	c.run(`/call save_note {"text":"milk"}`+"\n/quit\n", "chat", "--session", "notes")
	_, _, errs := c.run("n\n", "chat", "--session", "notes")
	if !strings.Contains(errs, `  assistant: [calls save_note {"text":"milk"}]`+"\n") {
		t.Fatalf("the recap does not show the call:\n%s", errs)
	}
}

// /help names every chat command.
func TestChatHelpListsEveryCommand(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	code, out, errs := c.run("/help\n", "chat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, cmd := range []string{"/sessions", "/open", "/new", "/history", "/retry", "/edit", "/branches", "/compact", "/mode", "/call", "/help", "/quit"} {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("/help leaves out %s:\n%s", cmd, out)
		}
	}
}

// A model that cannot work is refused before anything is opened: no
// session, no store folder, and the error names the variable and the flag.
func TestChatModelWithoutKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	for spec, variable := range map[string]string{"openai:gpt-4o-mini": "OPENAI_API_KEY", "anthropic:claude-sonnet-4-5": "ANTHROPIC_API_KEY"} {
		dir := filepath.Join(t.TempDir(), "store")
		code, out, errs := newCLI(t, nil).run("hello\n", "chat", "--model", spec, "--store", "file:"+dir)
		if code != 2 || !strings.Contains(errs, variable) || !strings.Contains(errs, "--model-key") || strings.Count(errs, "spool:") != 1 {
			t.Errorf("%s without a key: exit %d, stderr %q; want 2 and one line naming %s and --model-key", spec, code, errs, variable)
		}
		if out != "" {
			t.Errorf("%s: stdout %q", spec, out)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the store was created (%v)", spec, err)
		}
	}
}

// A turn the model refused as longer than its context window says how to
// go on: /compact, in this chat.
func TestChatContextTooLongSaysCompact(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	c.model = echo.New(echo.WithError(&model.Error{Code: transcript.CodeContextTooLong, StatusCode: 400, Message: "Bad Request"}))
	code, _, errs := c.run("hello\n", "chat", "--session", "long")
	if code != 1 || !strings.Contains(errs, "context_too_long") || !strings.Contains(errs, "/compact summarizes") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// smallContext is the echo model with a context window of max messages:
// a longer request fails as a provider's would (context_too_long).
type smallContext struct {
	model.Model
	max int
}

func (m smallContext) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	if _, _, summary := model.ReadSummaryRequest(req); !summary && len(req.Messages) > m.max {
		return func(yield func(model.Event, error) bool) {
			yield(model.Event{}, &model.Error{Code: transcript.CodeContextTooLong, StatusCode: 400, Message: "too many tokens"})
		}
	}
	return m.Model.Stream(ctx, req)
}

// A session that outgrew the model's context window goes on in the same
// chat: /compact summarizes its older turns and the question sent again
// is answered. The advice was a second program (spool sessions compact),
// which cannot reach a memory store's session at all.
func TestChatCompactAfterContextTooLong(t *testing.T) {
	c := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"})
	c.model = smallContext{Model: echo.New(), max: 8}
	code, out, errs := c.run("one\ntwo\nthree\nfour\nfive\n/compact 1\nfive again\n/compact x\n", "chat")
	if !strings.Contains(errs, "context_too_long") || !strings.Contains(errs, "/compact summarizes") {
		t.Fatalf("the fifth question did not fail as too long:\n%s", errs)
	}
	if !strings.Contains(out, "compacted 4 turns") || !strings.Contains(out, "echo: five again") {
		t.Fatalf("/compact did not let the conversation go on:\n%s\n%s", out, errs)
	}
	if !strings.Contains(errs, "error: /compact N: N is how many of the newest turns stay") {
		t.Errorf("/compact x: %s", errs)
	}
	if code != 1 { // the failed turn
		t.Errorf("exit %d, want 1", code)
	}
}

// --max-output-tokens (or SPOOL_MAX_OUTPUT_TOKENS) caps each answer: the
// provider's request carries it. A value that is not a positive number
// is refused, naming the flag or the variable it came from.
func TestChatMaxOutputTokens(t *testing.T) {
	var sent atomic.Value
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sent.Store(string(b))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(prov.Close)
	base := []string{"chat", "--model", "openai:m", "--base-url", prov.URL + "/v1", "--model-key", "k"}
	for _, c := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{nil, []string{"--max-output-tokens", "1234"}, `"max_tokens":1234`},
		{map[string]string{"SPOOL_MAX_OUTPUT_TOKENS": "777"}, nil, `"max_tokens":777`},
		{map[string]string{"SPOOL_MAX_OUTPUT_TOKENS": "777"}, []string{"--max-output-tokens", "99"}, `"max_tokens":99`},
	} {
		c.vars = maps.Clone(c.vars)
		if c.vars == nil {
			c.vars = map[string]string{}
		}
		c.vars["SPOOL_STORE"] = "memory:"
		code, _, errs := newCLI(t, c.vars).run("hello\n", append(slices.Clone(base), c.args...)...)
		if body, _ := sent.Load().(string); code != 0 || !strings.Contains(body, c.want) {
			t.Errorf("%v %v: exit %d (%s), request %s; want %s", c.vars, c.args, code, errs, body, c.want)
		}
	}
	for _, c := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{nil, []string{"--max-output-tokens", "-5"}, "--max-output-tokens"},
		{nil, []string{"--max-output-tokens", "lots"}, "-max-output-tokens"},
		{map[string]string{"SPOOL_MAX_OUTPUT_TOKENS": "lots"}, nil, "SPOOL_MAX_OUTPUT_TOKENS"},
	} {
		code, _, errs := newCLI(t, c.vars).run("hello\n", append(slices.Clone(base), c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 naming %s", c.vars, c.args, code, errs, c.want)
		}
	}
}

// An answer the provider cut at its output limit is shown, and then said
// to be incomplete, and why, naming the flag that raises the limit.
func TestChatSaysAnAnswerIsIncomplete(t *testing.T) {
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"once upon a"},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(prov.Close)
	code, out, errs := newCLI(t, map[string]string{"SPOOL_STORE": "memory:"}).run("tell me a story\n",
		"chat", "--model", "openai:m", "--base-url", prov.URL+"/v1", "--model-key", "k")
	if code != 0 || !strings.Contains(out, "once upon a") || !strings.Contains(errs, "(incomplete: the answer reached the model's output token limit") || !strings.Contains(errs, "--max-output-tokens N, or SPOOL_MAX_OUTPUT_TOKENS, raises") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
