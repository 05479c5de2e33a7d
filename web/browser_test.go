package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser tests drive the UI in headless Chromium against a real
// spool serve process on loopback (see harness_test.go):
//
//	go test -race -run TestBrowser ./web
//
// They skip without Chromium (and fail under CI=true) and with -short.
// Each saves screenshots: under $SPOOL_ARTIFACTS/<test> when that is set,
// else in the test's ArtifactDir (kept with go test -artifacts). Adding
// -update copies the README's screenshot to docs/screenshot.png:
//
//	go test -run 'TestBrowser/ui/readme' ./web -update

const (
	desktopW, desktopH = 1280, 800
	phoneW, phoneH     = 390, 844
)

// open loads the UI and waits until the conversation list has loaded.
func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url))
	tb.waitReady()
}

func (tb *tab) waitReady() {
	tb.t.Helper()
	tb.waitFor("the conversation list", `document.getElementById('list-scroller')?.getAttribute('aria-busy') === 'false'`)
}

// send types text into the message box and presses Enter (on a phone,
// taps Send).
func (tb *tab) send(text string) {
	tb.t.Helper()
	press := enter()
	if tb.mobile {
		press = chromedp.Click(chromedp.ID("send"))
	}
	tb.do(
		chromedp.WaitVisible(chromedp.ID("send")),
		chromedp.SendKeys(chromedp.ID("prompt"), text),
		press,
	)
	// Wait for the message to be in the view: the turn has started.
	tb.waitFor("the message to be sent", fmt.Sprintf(`document.getElementById('prompt').value === '' && [...document.querySelectorAll('#messages .msg.user .body')].at(-1)?.textContent === %q`, text))
}

// enter presses Enter (with modifiers) on the focused element the way a
// keyboard does: one keyDown event that carries the text, so that a page
// cancelling keydown types nothing. (chromedp.KeyEvent sends the char
// as an event of its own, which a cancelled keydown does not stop.)
func enter(mods ...kb.Modifier) chromedp.Action[chromedp.Void] {
	var m int64
	for _, x := range mods {
		m |= int64(x)
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			p := input.DispatchKeyEventParams{
				Type: typ, Key: "Enter", Code: "Enter", Modifiers: m,
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
			}
			if typ == input.DispatchKeyEventTypeKeyDown {
				p.Text, p.UnmodifiedText = "\r", "\r"
			}
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// waitIdle waits until no turn runs in the open conversation.
func (tb *tab) waitIdle() {
	tb.t.Helper()
	tb.waitFor("the turn to end", `document.getElementById('app').dataset.running === 'false' && !document.querySelector('#messages [aria-busy="true"]') && document.getElementById('scroller').getAttribute('aria-busy') !== 'true'`)
}

// bodies returns the texts of the message bubbles of a role, oldest first.
func (tb *tab) bodies(role string) []string {
	tb.t.Helper()
	return eval[[]string](tb, fmt.Sprintf(`[...document.querySelectorAll('#messages .msg.%s .body')].map(e => e.textContent)`, role))
}

func (tb *tab) hash() string {
	tb.t.Helper()
	return eval[string](tb, `location.hash`)
}

// clickSession opens a conversation from the list, scrolling to it.
func (tb *tab) clickSession(id string) {
	tb.t.Helper()
	sel := fmt.Sprintf(`#session-list li[data-id=%q] a`, id)
	tb.do(chromedp.ScrollIntoView(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
	tb.waitFor("conversation "+id, fmt.Sprintf(`location.hash === '#/c/%s' && document.querySelector('#session-list li[data-id=%q] a[aria-current=page]') && document.getElementById('conv-title').textContent !== 'Loading…'`, id, id))
}

func TestBrowser(t *testing.T) {
	b := browser(t)
	start := time.Now()
	t.Cleanup(func() { t.Logf("browser tests ran in %v", time.Since(start).Round(time.Millisecond)) })

	// A new conversation: the answer streams in, delta by delta, the URL
	// and the list pick up the id the server chose, Enter sends and
	// Shift+Enter breaks the line, Stop stops an answer. The browser goes
	// through a proxy that slows the event streams down, so that the
	// answer can be seen growing.
	t.Run("chat streams the answer", func(t *testing.T) {
		srv := startServe(t, "")
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(slowProxy(t, srv.URL, 150*time.Millisecond, 0) + "/")
		if got := tb.text("#list-end"); got != "No conversations yet." {
			t.Errorf("empty list says %q", got)
		}
		// Record every state the answer's text goes through: its text
		// each time a delta is rendered (the bubble counts them).
		eval[bool](tb, `(() => {
			window.__states = [];
			new MutationObserver(rs => { for (const r of rs) window.__states.push(r.target.querySelector('.body').textContent); })
				.observe(document.getElementById('messages'), {subtree: true, attributes: true, attributeFilter: ['data-deltas']});
			return true;
		})()`)
		tb.do(chromedp.Click(chromedp.ID("new-chat")))
		tb.waitFor("the message box to have focus", `document.activeElement?.id === 'prompt'`)
		tb.send("hello streaming world")
		partial := tb.poll("part of the answer", `document.querySelector('#messages .msg.assistant[aria-busy="true"] .body')?.textContent ?? ''`)
		tb.shot("chat-streaming")
		if partial == "echo: hello streaming world" || !strings.HasPrefix("echo: hello streaming world", partial) {
			t.Errorf("while the answer streams it shows %q", partial)
		}
		tb.waitIdle()
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: hello streaming world"}) {
			t.Fatalf("answer %q", got)
		}
		states := eval[[]string](tb, `window.__states`)
		want := []string{"echo: ", "echo: hello ", "echo: hello streaming ", "echo: hello streaming world"}
		if !slices.Equal(states, want) {
			t.Errorf("the answer went through %q, want %q: one state per streamed delta", states, want)
		}
		ids := srv.sessionIDs(t)
		if len(ids) != 1 {
			t.Fatalf("sessions %v", ids)
		}
		if h := tb.hash(); h != "#/c/"+ids[0] {
			t.Errorf("hash %q, want the new session %s", h, ids[0])
		}
		tb.waitFor("the list entry", fmt.Sprintf(`document.querySelector('#session-list li[data-id=%q] a[aria-current=page] .title')?.textContent === 'hello streaming world'`, ids[0]))
		if got := tb.text("#conv-title"); got != "hello streaming world" {
			t.Errorf("title %q", got)
		}

		// Shift+Enter is a new line, Enter sends.
		tb.do(
			chromedp.SendKeys(chromedp.ID("prompt"), "line one"),
			enter(kb.ModifierShift),
			chromedp.SendKeys(chromedp.ID("prompt"), "line two"),
		)
		if v := eval[string](tb, `document.getElementById('prompt').value`); v != "line one\nline two" {
			t.Fatalf("after Shift+Enter the box holds %q", v)
		}
		tb.do(enter())
		tb.waitFor("the two-line message", `[...document.querySelectorAll('#messages .msg.user .body')].at(-1)?.textContent === 'line one\nline two'`)
		tb.waitIdle()
		if got := tb.bodies("user"); !slices.Equal(got, []string{"hello streaming world", "line one\nline two"}) {
			t.Errorf("user messages %q", got)
		}
		if v := eval[string](tb, `document.getElementById('prompt').value`); v != "" {
			t.Errorf("the box still holds %q after sending", v)
		}

		// Stop ends an answer part-way.
		// (A long answer: at the proxy's pace it takes seconds, time
		// enough to press Stop on a busy machine.)
		tb.send("please stop this answer before it gets to the end of all these many words it would echo")
		tb.poll("part of the answer", `document.querySelector('#messages .msg.assistant[aria-busy="true"]') ? 'yes' : ''`)
		tb.do(chromedp.Click(chromedp.ID("stop")))
		tb.waitIdle()
		// After Stop the screen shows what the transcript holds: the
		// turn as stopped, or whole when the server had recorded it all
		// (spool serve's echo model answers at once; the proxy only
		// delays what the browser reads).
		// The view is read again once the stop's answer came: until
		// then it shows the answer as far as it streamed.
		tb.waitStored(srv, ids[0])
		tb.waitIdle()
		if ending := tb.text("#messages li.turn-foot:last-child .ending"); ending != "" && !strings.HasPrefix(ending, "Stopped before the answer was complete.") {
			t.Errorf("after Stop the conversation ends with %q", ending)
		}
		if !eval[bool](tb, `!document.getElementById('send').hidden && document.getElementById('stop').hidden`) {
			t.Errorf("after Stop the Send button is not back")
		}
		tb.shot("chat")
	})

	// A stream that breaks off does not lose the answer: the turn goes
	// on on the server, and the page shows the conversation again and
	// follows the rest of the turn (the follow stream breaks off too, and
	// resumes after the last event it had), ending with the answer as
	// stored, in one bubble, and no error. Once before the turn ends on
	// the server (a slow model) and once after.
	for _, c := range []struct{ name, model string }{{"mid-turn", "echo:?delay=60ms"}, {"after the turn", "echo"}} {
		t.Run("a broken stream goes on: "+c.name, func(t *testing.T) {
			srv := startServe(t, "", "--model", c.model)
			tb := newTab(t, b, desktopW, desktopH, false)
			// session, turn_start, step_start, then two of the text
			// events; the last may be lost with the connection.
			tb.open(slowProxy(t, srv.URL, 100*time.Millisecond, 5) + "/#/new")
			prompt := "this answer will come whole " + strings.Repeat("after a break ", 4)
			tb.send(prompt)
			tb.waitFor("the whole answer", fmt.Sprintf(`[...document.querySelectorAll('#messages .msg.assistant .body')].at(-1)?.textContent === %q`, "echo: "+prompt))
			tb.waitIdle()
			ids := srv.sessionIDs(t)
			if len(ids) != 1 {
				t.Fatalf("sessions %v", ids)
			}
			tb.sameAsStored(srv, ids[0], 0)
			if n := tb.count("#messages li.notice.failed"); n != 0 {
				t.Errorf("an error shown: %q", tb.text("#messages li.notice.failed"))
			}
			if !eval[bool](tb, `!document.getElementById('send').hidden`) {
				t.Errorf("the Send button is not back")
			}
			tb.shot("broken-stream")
			// A regenerated answer whose stream breaks off goes on too.
			tb.do(chromedp.Click(chromedp.CSS(`#messages li.turn-foot:last-child button.regenerate`)))
			tb.waitFor("the second version, whole", fmt.Sprintf(`document.querySelector('#messages li.turn-foot:last-child .versions .count')?.textContent === '2 / 2' && [...document.querySelectorAll('#messages .msg.assistant .body')].at(-1)?.textContent === %q`, "echo: "+prompt))
			tb.waitIdle()
			tb.sameAsStored(srv, ids[0], 0)
			if n := tb.count("#messages li.notice.failed"); n != 0 {
				t.Errorf("an error shown after Regenerate: %q", tb.text("#messages li.notice.failed"))
			}
		})
	}

	// A reload reopens the conversation from the URL, with every turn.
	t.Run("reload keeps the conversation", func(t *testing.T) {
		srv := startServe(t, "")
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/#/new")
		tb.send("first question")
		tb.waitIdle()
		tb.send("second question")
		tb.waitIdle()
		hash := tb.hash()
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("the messages", `document.querySelectorAll('#messages .msg').length === 4`)
		if h := tb.hash(); h != hash {
			t.Errorf("after the reload the hash is %q, was %q", h, hash)
		}
		if got := tb.bodies("user"); !slices.Equal(got, []string{"first question", "second question"}) {
			t.Errorf("user messages %q", got)
		}
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: first question", "echo: second question"}) {
			t.Errorf("answers %q", got)
		}
		if n := len(srv.sessionIDs(t)); n != 1 {
			t.Errorf("%d sessions, want the one conversation", n)
		}
		tb.shot("reloaded")
	})

	// The list loads its next page on scroll; an older conversation opens
	// from it; a long conversation loads older pages on scroll up and
	// keeps what is on screen in place.
	t.Run("older conversations and messages", func(t *testing.T) {
		srv := startServe(t, "")
		for i := 1; i <= 25; i++ {
			srv.invoke(t, fmt.Sprintf("s%02d", i), fmt.Sprintf("topic %02d", i))
		}
		for i := 1; i <= 45; i++ {
			srv.invoke(t, "long", fmt.Sprintf("turn %02d", i))
		}
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/")
		if n := tb.count("#session-list li"); n != 20 {
			t.Fatalf("first page of the list: %d entries, want 20", n)
		}
		first := eval[string](tb, `document.querySelector('#session-list li').dataset.id`)
		if first != "long" {
			t.Errorf("the list starts with %q, want the newest, long", first)
		}
		eval[bool](tb, `(s => { s.scrollTop = s.scrollHeight; return true; })(document.getElementById('list-scroller'))`)
		tb.waitFor("the second page of the list", `document.querySelectorAll('#session-list li').length === 26`)
		tb.clickSession("s03")
		tb.waitFor("its messages", `document.querySelectorAll('#messages .msg').length === 2`)
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: topic 03"}) {
			t.Errorf("s03 shows %q", got)
		}
		tb.shot("older-conversation")

		tb.clickSession("long")
		tb.waitFor("the newest page", `document.querySelectorAll('#messages .msg').length === 30`)
		users := tb.bodies("user")
		if users[0] != "turn 31" || users[len(users)-1] != "turn 45" {
			t.Fatalf("newest page shows turns %q … %q, want 31 … 45", users[0], users[len(users)-1])
		}
		if !eval[bool](tb, `(s => s.scrollHeight - s.scrollTop - s.clientHeight < 2)(document.getElementById('scroller'))`) {
			t.Errorf("the conversation did not open scrolled to its end")
		}
		for _, want := range []int{60, 90} {
			// Scroll to the top; once the older page is in, the message
			// that was at the top must still be where it was.
			before := eval[float64](tb, `(() => {
				const s = document.getElementById('scroller');
				s.scrollTop = 0;
				window.__anchor = document.querySelector('#messages li');
				return window.__anchor.getBoundingClientRect().top;
			})()`)
			tb.waitFor(fmt.Sprintf("%d messages", want), fmt.Sprintf(`document.querySelectorAll('#messages .msg').length === %d`, want))
			after := eval[float64](tb, `window.__anchor.getBoundingClientRect().top`)
			if d := after - before; d < -2 || d > 2 {
				t.Errorf("loading older messages moved the view by %.0fpx", d)
			}
		}
		users = tb.bodies("user")
		if len(users) != 45 || users[0] != "turn 01" {
			t.Errorf("after scrolling up: %d user messages from %q", len(users), users[0])
		}
		if vis := eval[bool](tb, `!document.getElementById('older').hidden`); vis {
			t.Errorf("the older-messages marker still shows at the beginning of the conversation")
		}
		tb.shot("long-conversation")
	})

	// A tool call that needs approval: Allow (also after a reload), Always
	// allow (the next call needs no one), and Deny.
	t.Run("approve a tool call", func(t *testing.T) {
		srv := startServe(t, "")
		srv.invoke(t, "weekend", "What did I plan for the weekend?")
		srv.invoke(t, "sunday", "Ideas for a rainy Sunday")
		srv.invoke(t, "tokyo", "What time is it in Tokyo?")
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/#/new")
		tb.send("Please remember to buy milk")
		tb.waitIdle()
		tb.send(`/call save_note {"text":"milk"}`)
		tb.waitFor("the approval request", `document.querySelector('#messages li.approval button[data-decision=allow][data-scope=once]')`)
		tb.waitIdle()
		if got := tb.text("#messages li.tool.call .args"); got != `{"text":"milk"}` {
			t.Errorf("tool call shown as %q", got)
		}
		// A message while the approval waits is refused: the error says
		// why and the text stays in the box.
		tb.do(chromedp.SendKeys(chromedp.ID("prompt"), "hello?"), enter())
		tb.waitFor("the error", `document.getElementById('composer-error').textContent !== ''`)
		if got := tb.text("#composer-error"); got != "A tool call is waiting for your approval: allow or deny it first." {
			t.Errorf("sending while an approval waits: %q", got)
		}
		if v := eval[string](tb, `document.getElementById('prompt').value`); v != "hello?" {
			t.Errorf("the box holds %q, want the refused text back", v)
		}
		if n := tb.count("#messages .msg.user"); n != 2 {
			t.Errorf("%d user messages shown, want the refused one gone", n)
		}
		// The request is still there after a reload (from the API).
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("the approval request after a reload", `document.querySelector('#messages li.approval button[data-decision=allow][data-scope=once]')`)
		tb.shot("approval-pending")
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.approval button[data-decision=allow][data-scope=once]`)))
		tb.waitFor("the tool's result", `[...document.querySelectorAll('#messages li.tool.result .out')].some(e => e.textContent === 'saved note: milk')`)
		tb.waitIdle()
		if got := tb.bodies("assistant"); !slices.Contains(got, "tool save_note returned: saved note: milk") {
			t.Errorf("answers %q", got)
		}
		if got := tb.text("#messages li.approval .outcome"); got != "Allowed once." {
			t.Errorf("the card says %q", got)
		}

		// Always allow: the next call of the tool runs without asking.
		tb.send(`/call save_note {"text":"eggs"}`)
		tb.waitFor("the second approval request", `document.querySelectorAll('#messages li.approval').length === 2`)
		tb.waitIdle()
		eval[bool](tb, `([...document.querySelectorAll('#messages li.approval')].at(-1).querySelector('button[data-decision=allow][data-scope=session]').click(), true)`)
		tb.waitFor("the second result", `[...document.querySelectorAll('#messages li.tool.result .out')].some(e => e.textContent === 'saved note: eggs')`)
		tb.waitIdle()
		tb.send(`/call save_note {"text":"bread"}`)
		tb.waitFor("the third result", `[...document.querySelectorAll('#messages li.tool.result .out')].some(e => e.textContent === 'saved note: bread')`)
		tb.waitIdle()
		if n := tb.count("#messages li.approval"); n != 2 {
			t.Errorf("%d approval cards, want 2: the call after Always allow needs none", n)
		}
		tb.shot("approved")

		// Deny, in a new conversation.
		tb.do(chromedp.Click(chromedp.ID("new-chat")))
		tb.waitFor("a new conversation", `location.hash === '#/new'`)
		tb.send(`/call save_note {"text":"secret"}`)
		tb.waitFor("the approval request", `document.querySelector('#messages li.approval button[data-decision=deny]')`)
		tb.waitIdle()
		tb.do(chromedp.Click(chromedp.CSS(`#messages li.approval button[data-decision=deny]`)))
		tb.waitFor("the refusal", `document.querySelector('#messages li.tool.result.failed .out')?.textContent === 'the user denied this call'`)
		tb.waitIdle()
		if got := tb.text("#messages li.approval .outcome"); got != "Denied." {
			t.Errorf("the card says %q", got)
		}
		tb.shot("denied")
	})

	// Delete asks in a dialog; Cancel keeps the conversation, Delete
	// removes it from the list and the server.
	t.Run("delete a conversation", func(t *testing.T) {
		srv := startServe(t, "")
		for _, id := range []string{"keep-1", "doomed", "keep-2"} {
			srv.invoke(t, id, "about "+id)
		}
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/")
		tb.clickSession("doomed")
		tb.do(chromedp.Click(chromedp.ID("delete")))
		tb.waitFor("the dialog", `document.getElementById('delete-dialog').open`)
		if got := tb.text("#delete-name"); got != "about doomed" {
			t.Errorf("the dialog names %q", got)
		}
		tb.shot("delete-dialog")
		tb.do(chromedp.Click(chromedp.CSS(`#delete-dialog button[value=cancel]`)))
		tb.waitFor("the dialog to close", `!document.getElementById('delete-dialog').open`)
		if code, _ := srv.do(t, "GET", "/v1/sessions/doomed", nil); code != 200 {
			t.Fatalf("after Cancel the session answers %d", code)
		}
		tb.do(chromedp.Click(chromedp.ID("delete")))
		tb.waitFor("the dialog", `document.getElementById('delete-dialog').open`)
		tb.do(chromedp.Click(chromedp.ID("delete-confirm")))
		tb.waitFor("the entry to go", `!document.querySelector('#session-list li[data-id="doomed"]') && location.hash === '#/'`)
		if code, _ := srv.do(t, "GET", "/v1/sessions/doomed", nil); code != 404 {
			t.Errorf("after Delete the session answers %d, want 404", code)
		}
		if ids := srv.sessionIDs(t); !slices.Equal(ids, []string{"keep-2", "keep-1"}) {
			t.Errorf("sessions left %v", ids)
		}
		if n := tb.count("#session-list li"); n != 2 {
			t.Errorf("%d entries left in the list", n)
		}
		tb.shot("deleted")
	})

	// A server with a key: the UI asks for it, refuses a wrong one with
	// a clear error, and works with the right one, which it keeps for
	// the tab.
	t.Run("wrong API key", func(t *testing.T) {
		const key = "correct-horse-battery-staple"
		srv := startServe(t, key)
		srv.invoke(t, "private", "a private matter")
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.do(chromedp.Navigate(srv.URL + "/"))
		tb.waitFor("the key form", `!document.getElementById('auth').hidden && document.activeElement?.id === 'auth-key'`)
		if got := tb.text("#auth-reason"); !strings.Contains(got, "needs an API key") {
			t.Errorf("the form says %q", got)
		}
		if !eval[bool](tb, `document.getElementById('app').inert`) {
			t.Errorf("the app is not inert behind the key form")
		}
		tb.shot("key-asked")
		tb.do(chromedp.SendKeys(chromedp.ID("auth-key"), "not-the-key-0123456789"), enter())
		tb.waitFor("the error", `document.getElementById('auth-error').textContent !== ''`)
		if got := tb.text("#auth-error"); got != "The server did not accept this key. Check it and try again." {
			t.Errorf("wrong key: %q", got)
		}
		if got := eval[string](tb, `sessionStorage.getItem('spool.apiKey') ?? ''`); got != "" {
			t.Errorf("a wrong key was kept: %q", got)
		}
		tb.shot("key-wrong")
		tb.retype("auth-key", key)
		tb.do(enter())
		tb.waitFor("the list", `document.getElementById('auth').hidden && document.querySelector('#session-list li[data-id="private"]')`)
		tb.clickSession("private")
		tb.send("still there?")
		tb.waitIdle()
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: a private matter", "echo: still there?"}) {
			t.Errorf("answers %q", got)
		}
		if got := eval[string](tb, `sessionStorage.getItem('spool.apiKey') + '|' + localStorage.getItem('spool.apiKey')`); got != key+"|null" {
			t.Errorf("key storage %q, want it in sessionStorage only", got)
		}
		tb.do(chromedp.Reload())
		tb.waitReady()
		if !eval[bool](tb, `document.getElementById('auth').hidden`) {
			t.Errorf("the key was asked again after a reload")
		}
		tb.shot("key-accepted")
	})

	// Content is text: markup in a prompt, an answer and a title is shown
	// as written and never becomes elements.
	t.Run("no markup from content", func(t *testing.T) {
		srv := startServe(t, "")
		srv.invoke(t, "titled", `<b id="bold">bold</b><script>window.__xss = 2</script>`)
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/#/new")
		const attack = `<img src=x onerror="window.__xss=1">`
		tb.send(attack)
		tb.waitIdle()
		if got := tb.bodies("user"); !slices.Equal(got, []string{attack}) {
			t.Errorf("prompt shown as %q", got)
		}
		if got := tb.bodies("assistant"); !slices.Equal(got, []string{"echo: " + attack}) {
			t.Errorf("answer shown as %q", got)
		}
		tb.waitFor("both titles", `document.querySelectorAll('#session-list li').length === 2`)
		titles := eval[[]string](tb, `[...document.querySelectorAll('#session-list .title')].map(e => e.textContent)`)
		if !slices.Contains(titles, attack) || !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, `<b id="bold">`) }) {
			t.Errorf("titles shown as %q", titles)
		}
		if n := tb.count("#app img, #app b, #app script, #bold"); n != 0 {
			t.Errorf("content became %d elements", n)
		}
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.waitFor("the messages", `document.querySelectorAll('#messages .msg').length === 2`)
		if n := tb.count("#app img, #app b, #app script, #bold"); n != 0 {
			t.Errorf("after a reload, content became %d elements", n)
		}
		if v := eval[string](tb, `String(window.__xss)`); v != "undefined" {
			t.Errorf("content ran as script: window.__xss = %s", v)
		}
		tb.shot("markup-as-text")
	})

	// A phone: one pane at a time, with back navigation, and nothing
	// wider than the screen.
	t.Run("phone", func(t *testing.T) {
		srv := startServe(t, "")
		srv.invoke(t, "groceries", "What should I buy for a week of dinners?")
		// A long unbroken word must wrap, not widen the page.
		srv.invoke(t, "trip", "Plan a two-day trip to Lisbon, like https://example.com/"+strings.Repeat("lisbon", 30))
		tb := newTab(t, b, phoneW, phoneH, true)
		tb.open(srv.URL + "/")
		shown := func() string {
			return eval[string](tb, `['.sidebar', '.conversation'].filter(s => getComputedStyle(document.querySelector(s)).display !== 'none').join(' ')`)
		}
		if got := shown(); got != ".sidebar" {
			t.Errorf("on a phone the start shows %q, want the list only", got)
		}
		tb.shot("phone-list")
		tb.clickSession("trip")
		if got := shown(); got != ".conversation" {
			t.Errorf("an open conversation shows %q, want the conversation only", got)
		}
		if !eval[bool](tb, `getComputedStyle(document.getElementById('back')).display !== 'none'`) {
			t.Errorf("no back link on a phone")
		}
		// On a phone Enter starts a new line; the button sends.
		tb.do(chromedp.SendKeys(chromedp.ID("prompt"), "and a third day?"), enter(), chromedp.SendKeys(chromedp.ID("prompt"), "or a fourth?"))
		if v := eval[string](tb, `document.getElementById('prompt').value`); v != "and a third day?\nor a fourth?" {
			t.Errorf("on a phone, Enter left %q in the box, want a new line", v)
		}
		if got := tb.text("#prompt-hint"); got != "Enter starts a new line; the Send button sends." {
			t.Errorf("the phone's hint says %q", got)
		}
		tb.do(chromedp.Click(chromedp.ID("send")))
		tb.waitFor("the message", `[...document.querySelectorAll('#messages .msg.user .body')].at(-1)?.textContent === 'and a third day?\nor a fourth?'`)
		tb.waitIdle()
		if !eval[bool](tb, `document.documentElement.scrollWidth <= window.innerWidth`) {
			t.Errorf("the page is wider than the screen: %v > %v", eval[int](tb, `document.documentElement.scrollWidth`), eval[int](tb, `window.innerWidth`))
		}
		tb.shot("phone-conversation")
		tb.do(chromedp.Click(chromedp.ID("back")))
		tb.waitFor("the list", `location.hash === '#/' && document.getElementById('app').dataset.pane === 'list'`)
		if got := shown(); got != ".sidebar" {
			t.Errorf("back shows %q, want the list", got)
		}
		if got := eval[string](tb, `document.activeElement?.closest('li')?.dataset.id ?? ''`); got != "trip" {
			t.Errorf("after back, focus is on %q, want the conversation left", got)
		}
	})

	// Live sessions (issue 13): a conversation open in two tabs, one on a
	// phone, one on a desktop. The desktop sees the phone's message and
	// the answer streaming, once each (the phone's own stream is not
	// doubled by its follow stream), and its list picks up a new
	// conversation the phone starts, without a reload.
	t.Run("two tabs follow each other", func(t *testing.T) {
		srv := startServe(t, "", "--model", "echo:?delay=40ms")
		srv.invoke(t, "shared", "first question")
		phone := newTab(t, b, phoneW, phoneH, true)
		desk := newTab(t, b, desktopW, desktopH, false)
		for _, tb := range []*tab{phone, desk} {
			tb.openLive(srv.URL+"/#/c/shared", 1)
		}
		// Count the answer bubbles each tab adds from now on: one each,
		// streamed (neither doubled nor shown again from a reload).
		for _, tb := range []*tab{phone, desk} {
			tb.countBubbles()
		}
		question := "a question from the phone with enough words to stream for a while"
		phone.send(question)
		partial := desk.poll("the phone's answer streaming on the desktop", fmt.Sprintf(`[...document.querySelectorAll('#messages .msg.user .body')].at(-1)?.textContent === %q && document.querySelector('#messages .msg.assistant[aria-busy="true"] .body')?.textContent || ''`, question))
		if want := "echo: " + question; partial == want || !strings.HasPrefix(want, partial) {
			t.Errorf("while the phone's answer streams the desktop shows %q", partial)
		}
		desk.shot("live-streaming")
		desk.waitIdle()
		phone.waitIdle()
		want := []string{"echo: first question", "echo: " + question}
		for name, tb := range map[string]*tab{"phone": phone, "desktop": desk} {
			if got := tb.bodies("assistant"); !slices.Equal(got, want) {
				t.Errorf("the %s shows the answers %q, want %q", name, got, want)
			}
			if got := tb.bodies("user"); !slices.Equal(got, []string{"first question", question}) {
				t.Errorf("the %s shows the questions %q", name, got)
			}
			if n := eval[int](tb, `window.__added`); n != 1 {
				t.Errorf("the %s added %d answer bubbles for one streamed answer", name, n)
			}
		}
		desk.waitFor("the list's new count", `document.querySelector('#session-list li[data-id="shared"] .meta')?.textContent.includes('4 messages')`)
		phone.shot("live-phone")

		// A new conversation on the phone shows in the desktop's list.
		phone.do(chromedp.Click(chromedp.ID("back")))
		phone.do(chromedp.Click(chromedp.ID("new-chat")))
		phone.send("a new conversation")
		phone.waitIdle()
		desk.waitFor("the phone's new conversation in the list", `[...document.querySelectorAll('#session-list li .title')].some(e => e.textContent === 'a new conversation')`)
		if n := desk.count("#session-list li"); n != 2 {
			t.Errorf("the desktop lists %d conversations, want 2", n)
		}
		desk.shot("live-list")
	})

	// Live sessions past two tabs (live_test.go).
	t.Run("live", func(t *testing.T) { testLive(t, b) })
	t.Run("a day's retryAfter is capped", func(t *testing.T) { testRetryAfterCapped(t, b) })

	// The items of issue 16 (ui_test.go), against one shared server.
	t.Run("ui", func(t *testing.T) { testUI(t, b) })

	// Defects found in review (robust_test.go).
	t.Run("robust", func(t *testing.T) { testRobust(t, b) })
}

// copyScreenshot copies the README's screenshot into docs/.
func copyScreenshot(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join("..", "docs", "screenshot.png")
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", dst)
}
