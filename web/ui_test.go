package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/spool-go/spool/store"
	_ "github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/transcript"
)

// step is one entry of a seeded session; a turn is named by turn.
type step struct {
	turn   string
	typ    transcript.Type
	status transcript.Status
	data   any
}

// seed writes sessions of the agent "default" into the file store at dir,
// before spool serve opens it, as a chain of entries from start, a second
// apart: a transcript whose turns end in ways the echo model cannot make
// (stopped, failed, refused), or that began days ago.
func seed(t *testing.T, dir string, start time.Time, sessions map[string][]step) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "file:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(st)
	for id, steps := range sessions {
		parent := ""
		turns := map[string]string{}
		for i, s := range steps {
			now := start.Add(time.Duration(i) * time.Second)
			if turns[s.turn] == "" {
				turns[s.turn] = transcript.NewID(now)
			}
			e, err := transcript.New(now, s.typ, turns[s.turn], s.data)
			if err != nil {
				t.Fatal(err)
			}
			e.ParentID, e.Status = parent, s.status
			if err := st.Append(ctx, store.Key{Agent: "default", ID: id}, e); err != nil {
				t.Fatalf("seed %s: %v", id, err)
			}
			parent = e.ID
		}
	}
}

// turnOK is a question and its answer, ended well.
func turnOK(turn, question, answer string) []step {
	return []step{
		{turn, transcript.TypeUserMessage, "", transcript.UserMessage{Text: question}},
		{turn, transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: answer, Model: "echo"}},
		{turn, transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{Usage: transcript.Usage{InputTokens: 12, OutputTokens: 34}, DurationMs: 1500}},
	}
}

// markdownAnswer is an answer with every kind of Markdown the UI renders,
// and every trick a model's output might play.
const markdownAnswer = "Here is **what you asked**, in _three_ parts:\n\n" +
	"1. a list item\n2. another, with `inline code`\n\n" +
	"| Store | Durable |\n|---|---|\n| file | yes |\n| memory | no |\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```\n\n" +
	"See [the docs](https://example.com/docs) or [click me](javascript:window.__xss=3).\n\n" +
	"<img src=x onerror=\"window.__xss=1\"> <script>window.__xss=2</script>\n\n" +
	"![a tracking pixel](https://tracker.example/p.png)\n"

// testUI drives each item of the UI the way a person does, against one
// spool serve whose store was seeded first (see seed); each subtest uses
// sessions of its own.
func testUI(t *testing.T, b context.Context) {
	dir := t.TempDir()
	days := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	seed(t, dir, days, map[string][]step{
		"markdown": turnOK("t1", "Show me some Markdown", markdownAnswer),
		"ends": slices.Concat(
			turnOK("t1", "hello", "hi there"),
			[]step{
				{"t2", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "a question I stopped"}},
				{"t2", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: "half an ans", Model: "echo"}},
				{"t2", transcript.TypeTurnEnd, transcript.StatusCancelled, transcript.TurnEnd{Error: &transcript.ErrorInfo{Code: "cancelled", Message: "the turn was cancelled"}}},
				{"t3", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "a question that failed"}},
				{"t3", transcript.TypeTurnEnd, transcript.StatusError, transcript.TurnEnd{Error: &transcript.ErrorInfo{Code: "provider_error", Message: "the provider answered 502"}}},
				{"t4", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "something forbidden"}},
				{"t4", transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: "prompt_refused", Message: "This prompt is not allowed here."}},
				{"t4", transcript.TypeTurnEnd, transcript.StatusPromptBlocked, transcript.TurnEnd{}},
				{"t5", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "a long story"}},
				{"t5", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: "once upon a", Model: "echo"}},
				{"t5", transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: transcript.NoticeOutputLimit, Message: "the answer reached the model's output token limit and is cut off; raise the limit to let it finish"}},
				{"t5", transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{}},
			},
		),
		"old-trip": turnOK("t1", "Plan three days in Porto", "Day one: the Ribeira."),
		"readme": turnOK("t1", "How do I read a whole file in Go?",
			"Use **`os.ReadFile`**: it opens, reads and closes the file in one call.\n\n"+
				"```go\ndata, err := os.ReadFile(\"notes.txt\")\nif err != nil {\n\treturn err\n}\nfmt.Printf(\"%d bytes\\n\", len(data))\n```\n\n"+
				"- it returns the whole content as `[]byte`\n- for large files, stream with `bufio.Scanner` instead\n"),
	})
	srv := startServe(t, "", "--store", "file:"+dir)

	// First, while the list holds only the seeded conversations.
	t.Run("readme screenshot", func(t *testing.T) { testReadmeShot(t, b, srv) })
	t.Run("markdown", func(t *testing.T) { testMarkdown(t, b, srv) })
	t.Run("state stays true", func(t *testing.T) { testStateTrue(t, b, srv) })
	t.Run("find and name", func(t *testing.T) { testFindName(t, b, srv) })
	t.Run("what the model sees", func(t *testing.T) { testModelSees(t, b, srv) })
	t.Run("keyboard and phone", func(t *testing.T) { testKeyboardPhone(t, b, srv) })
	t.Run("branches", func(t *testing.T) { testBranches(t, b, srv) })
	t.Run("compact", func(t *testing.T) { testCompact(t, b, srv) })
}

// both runs f in a desktop tab and in a phone tab.
func both(t *testing.T, b context.Context, f func(t *testing.T, tb *tab, phone bool)) {
	t.Run("desktop", func(t *testing.T) { f(t, newTab(t, b, desktopW, desktopH, false), false) })
	t.Run("phone", func(t *testing.T) { f(t, newTab(t, b, phoneW, phoneH, true), true) })
}

func testMarkdown(t *testing.T, b context.Context, srv *spoolServer) {
	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		tb.open(srv.URL + "/#/c/markdown")
		tb.waitFor("the answer", `document.querySelector('#messages .msg.assistant .body.md table')`)
		body := `document.querySelector('#messages .msg.assistant .body')`
		checks := []struct{ what, expr string }{
			{"bold", body + `.querySelector('strong')?.textContent === 'what you asked'`},
			{"emphasis", body + `.querySelector('em')?.textContent === 'three'`},
			{"an ordered list of two", body + `.querySelectorAll('ol > li').length === 2`},
			{"inline code", body + `.querySelector('li code')?.textContent === 'inline code'`},
			{"a table with a header row", body + `.querySelectorAll('table th').length === 2 && ` + body + `.querySelectorAll('table tbody tr').length === 2`},
			{"highlighted Go", body + `.querySelector('pre code.hljs.language-go .hljs-keyword')?.textContent === 'func'`},
			{"the code's label and Copy button", body + `.querySelector('.codeblock .lang')?.textContent === 'go' && !!` + body + `.querySelector('.codeblock button.copy')`},
			{"a safe link opening a new tab", (`(a => a && a.getAttribute('href') === 'https://example.com/docs' && a.rel === 'noopener noreferrer' && a.target === '_blank')(` +
				body + `.querySelector('a[href^="https://example.com"]'))`)},
			{"no javascript: link", `![...` + body + `.querySelectorAll('a')].some(a => /^\s*javascript:/i.test(a.getAttribute('href') || ''))`},
			{"the javascript: link's text kept", body + `.textContent.includes('click me')`},
			{"raw HTML shown as text", body + `.textContent.includes('<img src=x onerror="window.__xss=1">') && ` + body + `.textContent.includes('<script>')`},
			{"no element from raw HTML, no image", `document.querySelectorAll('#app img, #app script, #app [onerror]').length === 0`},
			{"the image as a link", body + `.querySelector('a[href="https://tracker.example/p.png"]')?.textContent === 'a tracking pixel'`},
			{"no script ran", `window.__xss === undefined`},
		}
		for _, c := range checks {
			if !eval[bool](tb, c.expr) {
				t.Errorf("Markdown: %s: not so (%s)", c.what, c.expr)
			}
		}
		if phone && !eval[bool](tb, `[...document.querySelectorAll('.conversation > .bar .button')].every(b => (r => r.left >= 0 && r.right <= innerWidth)(b.getBoundingClientRect()))`) {
			t.Errorf("on a phone the conversation's buttons do not all fit the screen")
		}
		if phone && !eval[bool](tb, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Errorf("the Markdown widens the page on a phone: %d > %d", eval[int](tb, `document.documentElement.scrollWidth`), eval[int](tb, `window.innerWidth`))
		}
		tb.do(chromedp.ScrollIntoView(chromedp.CSS(`#messages .codeblock`)))
		tb.shot("markdown")
		if phone {
			return
		}
		// Copy puts the code, as text, on the clipboard.
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			if _, err := chromedp.Call(tb.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: srv.URL,
			}); err != nil {
				t.Fatalf("grant %s: %v", name, err)
			}
		}
		tb.do(chromedp.Click(chromedp.CSS(`#messages .codeblock button.copy`)))
		tb.waitFor("Copied", `document.querySelector('#messages .codeblock button.copy').textContent === 'Copied'`)
		if got := eval[string](tb, `navigator.clipboard.readText()`); got != "func main() {\n\tfmt.Println(\"hello\")\n}" {
			t.Errorf("the clipboard holds %q", got)
		}

		// An answer is Markdown while it streams: the bold shows before
		// the answer ends.
		tb.open(slowProxy(t, srv.URL, 150*time.Millisecond, 0) + "/#/new")
		tb.send("**bold** then `code` and more words")
		tb.waitFor("bold while streaming", `document.querySelector('#messages .msg.assistant[aria-busy="true"] .body strong')?.textContent === 'bold'`)
		if n := eval[int](tb, `Number(document.querySelector('#messages .msg.assistant[aria-busy="true"]').dataset.deltas)`); n >= 6 {
			t.Errorf("bold shown only after %d deltas", n)
		}
		tb.waitIdle()
		if got := tb.text(`#messages .msg.assistant .body code`); got != "code" {
			t.Errorf("after streaming the code span is %q", got)
		}
		tb.shot("markdown-streamed")
	})
}

func testStateTrue(t *testing.T, b context.Context, srv *spoolServer) {
	// An approval answered updates the list at once.
	srv.invoke(t, "badge", `/call save_note {"text":"milk"}`)
	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		// Each turn ends as the model will see it.
		tb.open(srv.URL + "/#/c/ends")
		tb.waitFor("the endings", `document.querySelectorAll('#messages .ending').length === 4`)
		endings := eval[[]string](tb, `[...document.querySelectorAll('#messages .turn-foot .ending')].map(e => e.className + ': ' + e.textContent)`)
		want := []string{
			"ending cancelled: Stopped before the answer was complete. It is left out of what the model sees next.",
			"ending error: Failed: the provider answered 502. It is left out of what the model sees next.",
			"ending refused: Refused: This prompt is not allowed here. It is left out of what the model sees next.",
			"ending cut: Incomplete: the answer reached the model's output token limit and is cut off; raise the limit to let it finish.",
		}
		if !slices.Equal(endings, want) {
			t.Errorf("endings %q, want %q", endings, want)
		}
		// The model's view agrees: only the turns that ended well, the
		// incomplete answer with them.
		tb.do(chromedp.Click(chromedp.ID("show-history")))
		tb.waitFor("the history", `document.querySelectorAll('#history-list li').length > 0 && document.getElementById('history-panel').getAttribute('aria-busy') === 'false'`)
		if got := eval[[]string](tb, `[...document.querySelectorAll('#history-list .content')].map(e => e.textContent)`); !slices.Equal(got, []string{"hello", "hi there", "a long story", "once upon a"}) {
			t.Errorf("the model sees %q", got)
		}
		tb.shot("turn-endings")
		tb.do(chromedp.Click(chromedp.ID("close-history")))

		if !phone {
			tb.open(srv.URL + "/#/c/badge")
			tb.waitFor("the badge", `document.querySelector('#session-list li[data-id="badge"] .badge')?.textContent === 'needs approval'`)
			tb.waitFor("the approval", `document.querySelector('#messages li.approval button[data-decision=allow]')`)
			tb.do(chromedp.Click(chromedp.CSS(`#messages li.approval button[data-decision=allow][data-scope=once]`)))
			tb.waitIdle()
			tb.waitFor("the badge to go, without a reload", `document.querySelector('#session-list li[data-id="badge"]') && !document.querySelector('#session-list li[data-id="badge"] .badge')`)
			tb.shot("approved-list")
		}

		// Dot segments name no conversation; fetched as path steps, they
		// asked for other routes.
		for _, id := range []string{".", ".."} {
			tb.open(srv.URL + "/#/c/" + id)
			tb.waitFor("the not-found state of "+id, `document.getElementById('conv-title').textContent === 'Conversation not found'`)
		}
		// A conversation that does not exist is not created by typing.
		tb.open(srv.URL + "/#/c/gone-for-good")
		tb.waitFor("the not-found state", `document.getElementById('conv-title').textContent === 'Conversation not found'`)
		if !eval[bool](tb, `document.getElementById('prompt').disabled && document.getElementById('send').disabled`) {
			t.Errorf("the message box of a missing conversation is enabled")
		}
		eval[bool](tb, `(document.getElementById('composer').requestSubmit(), true)`)
		tb.shot("missing")
		if ids := srv.sessionIDs(t); slices.Contains(ids, "gone-for-good") {
			t.Errorf("sending in a missing conversation created it: %v", ids)
		}
	})
}

func testFindName(t *testing.T, b context.Context, srv *spoolServer) {
	// A long conversation whose match is pages back.
	srv.invoke(t, "long-trip", "Tell me about Lisbon trams")
	for i := 1; i <= 40; i++ {
		srv.invoke(t, "long-trip", fmt.Sprintf("and then step %02d", i))
	}
	srv.invoke(t, "cmd-title", `/call save_note {"text":"eggs"}`)
	srv.decideAll(t, "cmd-title", "allow")
	srv.invoke(t, "cmd-title", "What did I save?")
	srv.invoke(t, "rename-me", "a forgettable title")
	srv.invoke(t, "delete-me", "soon gone")

	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		tb.open(srv.URL + "/")
		// A title is never a command line.
		if got := tb.text(`#session-list li[data-id="cmd-title"] .title`); got != "What did I save?" {
			t.Errorf("the title of a conversation begun with /call is %q", got)
		}

		// Search, with the words highlighted, and a hit that opens its
		// message pages back.
		tb.do(chromedp.SendKeys(chromedp.ID("search"), "LISBON trams"))
		tb.waitFor("the hits", `document.querySelectorAll('#search-results li').length === 2`)
		marks := eval[[]string](tb, `[...document.querySelectorAll('#search-results li')[1].querySelectorAll('mark')].map(m => m.textContent)`)
		if !slices.Equal(marks, []string{"Lisbon", "trams"}) {
			t.Errorf("highlighted %q", marks)
		}
		if got := tb.text(`#search-results li .title`); got != "Tell me about Lisbon trams" {
			t.Errorf("a hit names its conversation %q", got)
		}
		if phone {
			tb.shot("search-phone")
		} else {
			tb.shot("search")
		}
		// The older hit: the question, 80 messages back.
		tb.do(chromedp.Click(chromedp.CSS(`#search-results li:last-child a`)))
		tb.waitFor("the message found", `document.querySelector('#messages li.found')`)
		if got := tb.text(`#messages li.found .body`); got != "Tell me about Lisbon trams" {
			t.Errorf("the jump lands on %q", got)
		}
		if !eval[bool](tb, `(r => r.top >= 0 && r.bottom <= innerHeight)(document.querySelector('#messages li.found').getBoundingClientRect())`) {
			t.Errorf("the message found is not in view")
		}
		tb.shot("search-jump")
		// Escape in the box brings the list back.
		if phone {
			tb.do(chromedp.Click(chromedp.ID("back")))
			tb.waitFor("the list", `document.getElementById('app').dataset.pane === 'list'`)
		}
		tb.do(chromedp.Focus(chromedp.ID("search")), key("Escape", "Escape", 27, 0))
		tb.waitFor("the list", `!document.getElementById('list-scroller').hidden && document.getElementById('search-panel').hidden`)
		if phone {
			return
		}

		// Rename: the header, the list, the server, a reload.
		tb.clickSession("rename-me")
		tb.do(chromedp.Click(chromedp.ID("rename")))
		tb.waitFor("the rename dialog", `document.getElementById('rename-dialog').open`)
		tb.retype("rename-title", "Trip budget 2027")
		tb.shot("rename-dialog")
		tb.do(chromedp.Click(chromedp.ID("rename-confirm")))
		tb.waitFor("the new title", `!document.getElementById('rename-dialog').open && document.getElementById('conv-title').textContent === 'Trip budget 2027'`)
		if got := tb.text(`#session-list li[data-id="rename-me"] .title`); got != "Trip budget 2027" {
			t.Errorf("the list says %q", got)
		}
		code, body := srv.do(t, "GET", "/v1/sessions/rename-me", nil)
		var info struct{ Title string }
		json.Unmarshal(body, &info)
		if code != 200 || info.Title != "Trip budget 2027" {
			t.Errorf("the server says %d %s", code, body)
		}
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("the title after a reload", `document.getElementById('conv-title').textContent === 'Trip budget 2027'`)

		// Delete from the list, without opening the conversation.
		tb.do(chromedp.Click(chromedp.CSS(`#session-list li[data-id="delete-me"] .row-delete`)))
		tb.waitFor("the dialog", `document.getElementById('delete-dialog').open`)
		if got := tb.text("#delete-name"); got != "soon gone" {
			t.Errorf("the dialog names %q", got)
		}
		tb.do(chromedp.Click(chromedp.ID("delete-confirm")))
		tb.waitFor("the entry to go", `!document.querySelector('#session-list li[data-id="delete-me"]')`)
		if code, _ := srv.do(t, "GET", "/v1/sessions/delete-me", nil); code != 404 {
			t.Errorf("after Delete from the list the session answers %d", code)
		}
		if got := tb.text("#conv-title"); got != "Trip budget 2027" {
			t.Errorf("deleting another conversation left %q open", got)
		}
	})
}

func testModelSees(t *testing.T, b context.Context, srv *spoolServer) {
	srv.invoke(t, "tools", "Keep notes for me")
	long := strings.Repeat("a long note ", 30)
	srv.invoke(t, "tools", `/call save_note {"text":"`+long+`"}`)
	srv.decideAll(t, "tools", "allow")
	srv.invoke(t, "tools", `/call save_note {"text":"short"}`)
	srv.decideAll(t, "tools", "deny")

	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		tb.open(srv.URL + "/#/c/tools")
		tb.waitFor("the tool calls", `document.querySelectorAll('#messages li.tool.call').length === 2`)
		// Long arguments and results are folded, short ones open.
		folds := eval[[]bool](tb, `[...document.querySelectorAll('#messages li.tool details')].map(d => d.open)`)
		if !slices.Equal(folds, []bool{false, false, true, true}) {
			t.Errorf("folded (false) and open details: %v, want the long call and its result folded", folds)
		}
		// How each approval was answered, after a reload.
		if got := eval[[]string](tb, `[...document.querySelectorAll('#messages li.tool.call .decision')].map(e => e.textContent)`); !slices.Equal(got, []string{"Allowed once", "Denied"}) {
			t.Errorf("the approvals' answers shown: %q", got)
		}
		// Each turn's model, usage and duration: the duration as the
		// messages route gives it, which omits one under a millisecond
		// (an echo turn on a fast disk), and then the footer has none.
		metas := eval[[]string](tb, `[...document.querySelectorAll('#messages .turn-foot .meta')].map(e => e.textContent)`)
		code, body := srv.do(t, "GET", "/v1/sessions/tools/messages", nil)
		var page struct{ Turns []struct{ DurationMs int64 } }
		if err := json.Unmarshal(body, &page); code != 200 || err != nil || len(page.Turns) < 3 {
			t.Fatalf("messages: %d %s", code, body)
		}
		if len(metas) < 3 || !strings.HasPrefix(metas[0], "echo · ") || !strings.Contains(metas[0], "tokens in") {
			t.Errorf("turn footers %q", metas)
		}
		for i, m := range metas[:min(len(metas), len(page.Turns))] {
			if timed := page.Turns[i].DurationMs > 0; strings.HasSuffix(m, " s") != timed {
				t.Errorf("turn %d took %d ms, and its footer says %q", i, page.Turns[i].DurationMs, m)
			}
		}
		code, body = srv.do(t, "GET", "/v1/sessions/tools/history", nil)
		var hist struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(body, &hist); code != 200 || err != nil {
			t.Fatalf("history: %d %s", code, body)
		}
		tb.do(chromedp.Click(chromedp.ID("show-history")))
		tb.waitFor("the history", fmt.Sprintf(`document.querySelectorAll('#history-list li').length === %d && document.getElementById('history-panel').getAttribute('aria-busy') === 'false'`, len(hist.Messages)))
		roles := eval[[]string](tb, `[...document.querySelectorAll('#history-list li')].map(li => li.className.replace('hmsg ', ''))`)
		var want []string
		for _, m := range hist.Messages {
			want = append(want, m.Role)
		}
		if !slices.Equal(roles, want) {
			t.Errorf("the panel shows roles %q, the history route %q", roles, want)
		}
		if got := tb.text("#history-status"); !strings.HasPrefix(got, fmt.Sprintf("The next request carries %d messages", len(hist.Messages))) {
			t.Errorf("the panel says %q", got)
		}
		if phone {
			// The panel covers the screen, and closes back to the conversation.
			if !eval[bool](tb, `(r => r.width === innerWidth)(document.getElementById('history-panel').getBoundingClientRect())`) {
				t.Errorf("on a phone the panel does not take the screen")
			}
		}
		tb.shot("model-view")
		// A new turn shows in the panel at once.
		tb.do(chromedp.Click(chromedp.ID("close-history")))
		tb.send("one more")
		tb.waitIdle()
		tb.do(chromedp.Click(chromedp.ID("show-history")))
		tb.waitFor("the new turn in the panel", `[...document.querySelectorAll('#history-list .content')].at(-1)?.textContent === 'echo: one more'`)
		tb.do(chromedp.Click(chromedp.ID("close-history")))
	})
}

// key presses a key with modifiers on the focused element, as a keyboard
// does.
func key(k, code string, vk int64, mods int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: k, Code: code, Modifiers: mods, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

const (
	modCtrl  = 2
	modShift = 8
)

func testKeyboardPhone(t *testing.T, b context.Context, srv *spoolServer) {
	t.Run("keyboard", func(t *testing.T) {
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(slowProxy(t, srv.URL, 150*time.Millisecond, 0) + "/#/new")
		tb.send("please stop this one before it ends, it has a great many words to echo back at you")
		tb.poll("the answer to start", `document.querySelector('#messages .msg.assistant[aria-busy="true"]') ? 'yes' : ''`)
		tb.do(key("Escape", "Escape", 27, 0))
		tb.waitIdle()
		if !eval[bool](tb, `!document.getElementById('send').hidden && document.activeElement?.id === 'prompt'`) {
			t.Errorf("after Escape the answer still runs, or the focus left the box")
		}
		tb.do(key("O", "KeyO", 79, modCtrl|modShift))
		// The hash changes at once and the prompt had the focus already:
		// the new conversation's placeholder says the route ran (it
		// focuses the prompt), so that it cannot take the focus from the
		// search box after Ctrl+K. (An empty message list does not: the
		// stopped turn's conversation is read again once the stop is
		// recorded, which empties the list first.)
		tb.waitFor("a new conversation", `location.hash === '#/new' && document.activeElement?.id === 'prompt' && document.querySelectorAll('#messages .msg').length === 0 && !document.getElementById('empty').hidden && document.getElementById('empty').textContent === 'Send a message to start a conversation.'`)
		tb.do(key("k", "KeyK", 75, modCtrl))
		tb.waitFor("the search box", `document.activeElement?.id === 'search'`)

		// Dates and how long ago: a conversation of three days ago.
		tb.open(srv.URL + "/#/c/old-trip")
		tb.waitFor("its messages", `document.querySelectorAll('#messages .msg').length === 2`)
		if got := tb.text(`#session-list li[data-id="old-trip"] time`); !strings.HasSuffix(got, " · 3 days ago") {
			t.Errorf("the list says %q of a conversation three days old", got)
		}
		if got := tb.text(`#messages .msg.user time`); !strings.HasSuffix(got, " · 3 days ago") || !strings.Contains(got, ",") {
			t.Errorf("a message of three days ago says %q, want its date and time and how long ago", got)
		}

		// The colour scheme: the system's (light here), light, dark, kept
		// over a reload, then the system's again.
		bg := func() string { return eval[string](tb, `getComputedStyle(document.body).backgroundColor`) }
		if got := bg(); got != "rgb(255, 255, 255)" {
			t.Errorf("the system's light scheme: %s", got)
		}
		tb.do(chromedp.Click(chromedp.ID("theme")), chromedp.Click(chromedp.ID("theme")))
		if got, label := bg(), eval[string](tb, `document.getElementById('theme').getAttribute('aria-label')`); got != "rgb(22, 23, 26)" || label != "Colour scheme: dark" {
			t.Errorf("after choosing dark: %s, %q", got, label)
		}
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("its messages", `document.querySelectorAll('#messages .msg').length === 2`)
		if got := bg(); got != "rgb(22, 23, 26)" {
			t.Errorf("after a reload the dark choice is gone: %s", got)
		}
		tb.shot("dark")
		// Dark chosen on a system set to dark, then light overrides it.
		tb.scheme("dark")
		tb.do(chromedp.Click(chromedp.ID("theme")))
		if got := bg(); got != "rgb(22, 23, 26)" {
			t.Errorf("the system's dark scheme: %s", got)
		}
		tb.do(chromedp.Click(chromedp.ID("theme")))
		if got := bg(); got != "rgb(255, 255, 255)" {
			t.Errorf("light chosen over the system's dark: %s", got)
		}
		tb.shot("light-over-dark")
		// Dark, then back to the system's, which nothing then overrides.
		tb.do(chromedp.Click(chromedp.ID("theme")), chromedp.Click(chromedp.ID("theme")))
		if got, kept := bg(), eval[string](tb, `localStorage.getItem('spool.theme') ?? ''`); got != "rgb(22, 23, 26)" || kept != "" {
			t.Errorf("back to the system's dark scheme: %s, %q kept", got, kept)
		}
	})
	t.Run("phone", func(t *testing.T) {
		tb := newTab(t, b, phoneW, phoneH, true)
		tb.scheme("dark")
		tb.open(srv.URL + "/#/c/old-trip")
		tb.waitFor("its messages", `document.querySelectorAll('#messages .msg').length === 2`)
		if got := eval[string](tb, `getComputedStyle(document.body).backgroundColor`); got != "rgb(22, 23, 26)" {
			t.Errorf("a phone set to dark: %s", got)
		}
		tb.do(chromedp.SendKeys(chromedp.ID("prompt"), "first line"), enter(), chromedp.SendKeys(chromedp.ID("prompt"), "second line"))
		if v := eval[string](tb, `document.getElementById('prompt').value`); v != "first line\nsecond line" {
			t.Errorf("on a phone, Enter left %q", v)
		}
		tb.do(chromedp.Click(chromedp.ID("send")))
		tb.waitFor("the message", `[...document.querySelectorAll('#messages .msg.user .body')].at(-1)?.textContent === 'first line\nsecond line'`)
		tb.waitIdle()
		tb.shot("phone-dark")
	})
}

func testBranches(t *testing.T, b context.Context, srv *spoolServer) {
	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		tb.open(srv.URL + "/#/new")
		tb.send("first question")
		tb.waitIdle()
		tb.send("second question")
		tb.waitIdle()
		id := strings.TrimPrefix(tb.hash(), "#/c/")
		// Regenerate the newest answer: two versions, the new one shown.
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.turn-foot:last-child button.regenerate`)))
		tb.waitFor("the second version", `document.querySelector('#messages li.turn-foot:last-child .versions .count')?.textContent === '2 / 2'`)
		tb.waitIdle()
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: first question", "echo: second question"}) {
			t.Errorf("after Regenerate: %q", got)
		}
		// Back to the first version, and forward again.
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.turn-foot:last-child .versions button.prev`)))
		tb.waitFor("the first version", `document.querySelector('#messages li.turn-foot:last-child .versions .count')?.textContent === '1 / 2'`)
		tb.waitIdle()
		tb.shot("versions")
		// Edit the first question: a new version of it, later turns gone.
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.msg.user button.edit`)))
		tb.waitFor("the edit box", `document.activeElement?.classList.contains('edit-box')`)
		if v := eval[string](tb, `document.activeElement.value`); v != "first question" {
			t.Errorf("the edit box holds %q", v)
		}
		eval[bool](tb, `(document.querySelector('#messages .edit-box').value = '', true)`)
		tb.do(chromedp.SendKeys(chromedp.CSS(`#messages .edit-box`), "first question, edited"))
		tb.shot("editing")
		tb.do(chromedp.Click(chromedp.CSS(`#messages .edit-form button[type=submit]`)))
		tb.waitFor("the edited turn", `document.querySelectorAll('#messages .msg.user').length === 1 && document.querySelector('#messages .msg.user .body').textContent === 'first question, edited'`)
		tb.waitIdle()
		tb.waitFor("its versions", `document.querySelector('#messages li.turn-foot .versions .count')?.textContent === '2 / 2'`)
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: first question, edited"}) {
			t.Errorf("after the edit: %q", got)
		}
		// The server agrees, and the model sees the active branch.
		code, body := srv.do(t, "GET", "/v1/sessions/"+id+"/history", nil)
		if code != 200 || !strings.Contains(string(body), "first question, edited") || strings.Contains(string(body), "second question") {
			t.Errorf("the history after the edit: %d %s", code, body)
		}
		tb.shot("edited")
		// The old version comes back with what followed it.
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.turn-foot .versions button.prev`)))
		tb.waitFor("the old version", `document.querySelectorAll('#messages .msg.user').length === 2`)
		tb.waitIdle()
		if got := tb.bodies("user"); !slices.Equal(got, []string{"first question", "second question"}) {
			t.Errorf("after switching back: %q", got)
		}
	})
}

// testReadmeShot makes the README's screenshot: a Markdown answer, a tool
// call with its approval answered, and the "what the model sees" panel.
func testReadmeShot(t *testing.T, b context.Context, srv *spoolServer) {
	srv.invoke(t, "readme", `/call save_note {"text":"read files with os.ReadFile"}`)
	srv.decideAll(t, "readme", "allow")
	rename := map[string]string{"title": "Reading files in Go"}
	if code, body := srv.do(t, "PATCH", "/v1/sessions/readme", rename); code != 200 {
		t.Fatalf("rename: %d %s", code, body)
	}
	tb := newTab(t, b, desktopW, desktopH, false)
	tb.open(srv.URL + "/#/c/readme")
	tb.waitFor("the conversation", `document.querySelectorAll('#messages li.tool').length === 2 && document.querySelector('#messages pre code.hljs')`)
	tb.do(chromedp.Click(chromedp.ID("show-history")))
	tb.waitFor("the history", fmt.Sprintf(`document.querySelectorAll('#history-list li').length === %d`, srv.historyLen(t, "readme")))
	eval[bool](tb, `(document.getElementById('scroller').scrollTop = 0, document.activeElement.blur(), true)`)
	if path := tb.shot("readme"); *update && path != "" {
		copyScreenshot(t, path)
	}
}

// scheme makes the tab's system colour scheme light or dark.
func (tb *tab) scheme(s string) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}},
	}); err != nil {
		tb.t.Fatalf("emulate prefers-color-scheme: %s: %v", s, err)
	}
}

// testCompact presses Compact in the "What the model sees" panel: the
// older turns summarized (echo's summary lists their questions), the
// panel showing the summary pair, the conversation keeping every turn
// with a divider after the covered ones that opens to the summary; and a
// conversation too short to compact says so.
func testCompact(t *testing.T, b context.Context, srv *spoolServer) {
	srv.invoke(t, "compact-short", "only one question")
	both(t, b, func(t *testing.T, tb *tab, phone bool) {
		id := "compact-desktop"
		if phone {
			id = "compact-phone"
		}
		for i := 1; i <= 7; i++ {
			srv.invoke(t, id, fmt.Sprintf("question %d", i))
		}
		tb.open(srv.URL + "/#/c/" + id)
		tb.waitFor("the conversation", `document.querySelectorAll('#messages .msg.user').length === 7`)
		if n := tb.count(`#messages li.summary-divider`); n != 0 {
			t.Errorf("%d summary dividers before compacting", n)
		}
		tb.do(chromedp.Click(chromedp.ID("show-history")))
		tb.waitFor("the history", `document.querySelectorAll('#history-list li').length === 14 && document.getElementById('history-panel').getAttribute('aria-busy') === 'false'`)
		if !eval[bool](tb, `(b => !b.disabled && b.textContent === 'Compact')(document.getElementById('compact'))`) {
			t.Errorf("no enabled Compact button in the panel")
		}
		tb.do(chromedp.Click(chromedp.ID("compact")))
		// The agent keeps its newest 4 turns: turns 1 to 3 summarized.
		got := tb.poll("what Compact did", `(t => t.startsWith('Summarized') ? t : '')(document.getElementById('compact-status').textContent)`)
		if !strings.HasPrefix(got, "Summarized 3 turns: 14 → 10 messages") {
			t.Errorf("Compact says %q", got)
		}
		tb.waitFor("the panel anew", `document.querySelectorAll('#history-list li').length === 10 && document.getElementById('history-panel').getAttribute('aria-busy') === 'false'`)

		code, body := srv.do(t, "GET", "/v1/sessions/"+id+"/history", nil)
		var hist struct {
			Summary *struct{ EntryID, FirstTurn, LastTurn, Text string }
		}
		if err := json.Unmarshal(body, &hist); code != 200 || err != nil || hist.Summary == nil {
			t.Fatalf("history after compacting: %d %s", code, body)
		}
		for i := 1; i <= 3; i++ {
			if !strings.Contains(hist.Summary.Text, fmt.Sprintf("question %d", i)) {
				t.Errorf("the summary %q leaves out question %d", hist.Summary.Text, i)
			}
		}
		// The panel marks the pair that stands in for turns 1 to 3.
		marked := eval[[]string](tb, `[...document.querySelectorAll('#history-list li.summary')].map(li => li.className + ' | ' + li.querySelector('.content').textContent)`)
		wantMarked := []string{"hmsg user summary | Summarize the earlier part of our conversation.",
			"hmsg assistant summary | Summary of the earlier part of our conversation:\n\n" + hist.Summary.Text}
		if !slices.Equal(marked, wantMarked) {
			t.Errorf("the panel marks %q, want %q", marked, wantMarked)
		}
		if got := eval[string](tb, `[...document.querySelectorAll('#history-list li')][2].querySelector('.content').textContent`); got != "question 4" {
			t.Errorf("after the summary the panel shows %q, want question 4", got)
		}
		if got := tb.text("#history-status"); !strings.Contains(got, "carries 10 messages") || !strings.Contains(got, "marked Summary") {
			t.Errorf("the panel says %q", got)
		}
		if phone && !eval[bool](tb, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Errorf("the panel widens the page on a phone")
		}
		tb.shot("compacted-panel")

		// The conversation keeps every turn, with the divider after turn 3.
		tb.waitFor("the divider", `document.querySelector('#messages li.summary-divider')`)
		if n := tb.count(`#messages .msg.user`); n != 7 {
			t.Errorf("after compacting the conversation shows %d questions, want 7", n)
		}
		at := eval[[]string](tb, `(d => [d.previousElementSibling.dataset.turnId, d.nextElementSibling.querySelector('.body').textContent, d.querySelector('summary').textContent])(document.querySelector('#messages li.summary-divider'))`)
		if !slices.Equal(at, []string{hist.Summary.LastTurn, "question 4", "Earlier turns summarized"}) {
			t.Errorf("the divider (turn before, question after, label) %q, want after turn %s", at, hist.Summary.LastTurn)
		}
		if n := tb.count(`#messages li.summary-divider`); n != 1 {
			t.Errorf("%d dividers", n)
		}
		tb.do(chromedp.Click(chromedp.ID("close-history")))
		if eval[bool](tb, `document.querySelector('#messages li.summary-divider details').open`) {
			t.Errorf("the divider is open before it is pressed")
		}
		tb.do(chromedp.ScrollIntoView(chromedp.CSS(`#messages li.summary-divider`)), chromedp.Click(chromedp.CSS(`#messages li.summary-divider summary`)))
		tb.waitFor("the divider open", `document.querySelector('#messages li.summary-divider details').open`)
		if got := tb.text(`#messages li.summary-divider .summary-text`); got != hist.Summary.Text {
			t.Errorf("the divider opens to %q, want the summary %q", got, hist.Summary.Text)
		}
		if !eval[bool](tb, `document.querySelector('#messages li.summary-divider .summary-text').checkVisibility()`) {
			t.Errorf("the summary's text is not visible when the divider is open")
		}
		if phone && !eval[bool](tb, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Errorf("the divider widens the page on a phone")
		}
		tb.shot("compacted-divider")
		// After a reload it is still there.
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("the divider after a reload", `document.querySelector('#messages li.summary-divider') && document.querySelectorAll('#messages .msg.user').length === 7`)

		// Too short to compact: a readable message, nothing written.
		tb.open(srv.URL + "/#/c/compact-short")
		tb.waitFor("the short conversation", `document.querySelectorAll('#messages .msg.user').length === 1`)
		tb.do(chromedp.Click(chromedp.ID("show-history")))
		tb.waitFor("its history", `document.querySelectorAll('#history-list li').length === 2 && document.getElementById('history-panel').getAttribute('aria-busy') === 'false'`)
		if got := tb.text("#compact-status"); got != "" {
			t.Errorf("another conversation's Compact result is still shown: %q", got)
		}
		tb.do(chromedp.Click(chromedp.ID("compact")))
		got = tb.poll("why nothing was compacted", `(e => e.classList.contains('failed') ? e.textContent : '')(document.getElementById('compact-status'))`)
		if got != "Not compacted. Nothing to compact yet: the newest turns are kept as they are, and there are no older ended turns to summarize." {
			t.Errorf("Compact on a short conversation says %q", got)
		}
		if tb.count(`#messages li.summary-divider`) != 0 || tb.count(`#history-list li.summary`) != 0 {
			t.Errorf("a summary shows for a conversation that was not compacted")
		}
		tb.shot("nothing-to-compact")
		tb.do(chromedp.Click(chromedp.ID("close-history")))
	})
}
