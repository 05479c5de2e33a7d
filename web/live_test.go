package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Live sessions in the browser (issue 13, item 6), past what "two tabs
// follow each other" (browser_test.go) shows: a turn that runs elsewhere
// when a tab opens on it, approvals answered in another tab, the list
// of the other tabs, and a follow stream that drops mid-turn.

// elsewhere runs a turn on a session as another client would (POST
// /invoke: spool chat, another device), in the background. The returned
// function waits for the turn's end and returns the response's status
// code (0 when the request failed).
func (s *spoolServer) elsewhere(t *testing.T, session, prompt string) (wait func() int) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"sessionId": session, "prompt": prompt})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code := 0
		defer func() { done <- code }()
		req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"/invoke", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if s.key != "" {
			req.Header.Set("Authorization", "Bearer "+s.key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		if _, err := io.Copy(io.Discard, res.Body); err == nil {
			code = res.StatusCode
		}
	}()
	code, waited := 0, false
	t.Cleanup(func() {
		if !waited {
			cancel()
			<-done
		}
	})
	return func() int {
		if !waited {
			code, waited = <-done, true
		}
		return code
	}
}

// openLive opens a conversation and waits until it is followed and shows
// its answers (how many there are).
func (tb *tab) openLive(url string, answers int) {
	tb.t.Helper()
	tb.open(url)
	tb.waitFor("the conversation followed", fmt.Sprintf(`document.getElementById('app').dataset.live === 'on' && document.querySelectorAll('#messages .msg.assistant').length === %d`, answers))
}

// countBubbles makes the page count the assistant bubbles added to the
// conversation from now on (window.__added), and the times its follow
// stream dropped (window.__drops).
func (tb *tab) countBubbles() {
	tb.t.Helper()
	eval[bool](tb, `(() => {
		window.__added = 0;
		window.__drops = 0;
		new MutationObserver(rs => { for (const r of rs) for (const n of r.addedNodes) if (n.matches?.('li.msg.assistant')) window.__added++; })
			.observe(document.getElementById('messages'), {childList: true});
		new MutationObserver(() => { if (document.getElementById('app').dataset.live === 'off') window.__drops++; })
			.observe(document.getElementById('app'), {attributes: true, attributeFilter: ['data-live']});
		return true;
	})()`)
}

// streaming waits until the open conversation shows an answer growing
// and returns its text so far.
func (tb *tab) streaming(what string) string {
	tb.t.Helper()
	return tb.poll(what, `document.querySelector('#messages .msg.assistant[aria-busy="true"] .body')?.textContent || ''`)
}

// waitStored waits until a tab shows a session's answers as the
// transcript holds them, both read again each time: after a Stop the
// view is read again once the stop's answer came, and until then shows
// the answer as far as it streamed.
func (tb *tab) waitStored(srv *spoolServer, session string) {
	tb.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		got, want := tb.bodies("assistant"), srv.answers(tb.t, session)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.shot("timeout")
			tb.t.Fatalf("the answers shown are %q, the transcript's %q, after %s; the page: %s", got, want, stepTimeout, tb.where())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sameAsStored checks that a tab shows a session's answers exactly as
// the transcript holds them, and each tool call and result once.
func (tb *tab) sameAsStored(srv *spoolServer, session string, calls int) {
	tb.t.Helper()
	if got, want := tb.bodies("assistant"), srv.answers(tb.t, session); !slices.Equal(got, want) {
		tb.t.Errorf("the answers shown are %q, the transcript's %q", got, want)
	}
	for _, sel := range []string{"#messages li.tool.call", "#messages li.tool.result"} {
		if n := tb.count(sel); n != calls {
			tb.t.Errorf("%d of %s shown, want %d", n, sel, calls)
		}
	}
}

func testLive(t *testing.T, b context.Context) {
	// A tab opened (or reloaded) while a turn runs elsewhere shows what
	// the transcript has of it, then the rest as it streams, each part
	// once; its Stop button stops that turn.
	t.Run("a turn running elsewhere", func(t *testing.T) {
		srv := startServe(t, "", "--model", "echo:?delay=80ms", "--mode", "auto")
		srv.invoke(t, "away", "first question")
		// A turn of two steps: a tool call (stored once its step ends),
		// then a long answer to its result.
		note := strings.Repeat("a note long enough to stream for a while ", 8)
		wait := srv.elsewhere(t, "away", fmt.Sprintf(`/call save_note {"text":%q}`, note))
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.open(srv.URL + "/#/c/away")
		partial := tb.streaming("the running turn's answer streaming")
		if want := "tool save_note returned: saved note: " + note; partial == want || !strings.HasPrefix(want, partial) {
			t.Errorf("while the turn runs elsewhere the tab shows %q", partial)
		}
		if !eval[bool](tb, `!document.getElementById('stop').hidden && document.getElementById('send').hidden`) {
			t.Errorf("while a turn runs elsewhere the tab offers no Stop")
		}
		tb.shot("live-joined")
		if code := wait(); code != 200 {
			t.Fatalf("the turn elsewhere: %d", code)
		}
		tb.waitIdle()
		tb.sameAsStored(srv, "away", 1)

		// Reloaded mid-turn, the tab streams the turn again, and stops it.
		wait = srv.elsewhere(t, "away", "please go on "+strings.Repeat("and on ", 100))
		tb.poll("the next turn streaming", `document.querySelectorAll('#messages .msg.user').length === 3 && document.querySelector('#messages .msg.assistant[aria-busy="true"]') ? 'yes' : ''`)
		tb.do(chromedp.Reload())
		tb.waitReady()
		tb.streaming("the turn streaming after the reload")
		tb.do(chromedp.Click(chromedp.ID("stop")))
		tb.waitFor("the stopped turn", `document.querySelector('#messages li.turn-foot:last-child .ending')?.textContent.startsWith('Stopped before the answer was complete.')`)
		tb.waitIdle()
		wait()
		tb.sameAsStored(srv, "away", 1)
		if !eval[bool](tb, `!document.getElementById('send').hidden && document.getElementById('stop').hidden`) {
			t.Errorf("after Stop the Send button is not back")
		}
		tb.shot("live-stopped")
	})

	// A turn that pauses on an approval in one tab asks in the other too;
	// answered there, both show the resumed turn. The lists follow: a
	// conversation started elsewhere, its count, and its approval
	// waiting, without a reload.
	t.Run("approvals and the list in two tabs", func(t *testing.T) {
		srv := startServe(t, "", "--model", "echo:?delay=20ms")
		srv.invoke(t, "notes", "hello")
		a := newTab(t, b, desktopW, desktopH, false)
		bt := newTab(t, b, desktopW, desktopH, false)
		a.openLive(srv.URL+"/#/c/notes", 1)
		bt.openLive(srv.URL+"/#/c/notes", 1)
		a.send(`/call save_note {"text":"milk"}`)
		card := `#messages li.approval button[data-decision=allow][data-scope=once]`
		a.waitFor("the approval request", fmt.Sprintf(`document.querySelector(%q)`, card))
		bt.waitFor("the approval request in the other tab", fmt.Sprintf(`document.querySelector(%q)`, card))
		bt.waitIdle()
		badge := `document.querySelector('#session-list li[data-id="notes"] .badge')?.textContent === 'needs approval'`
		bt.waitFor("the list marking the approval", badge)
		bt.shot("live-approval-asked")
		bt.do(chromedp.Click(chromedp.CSS(card)))
		result := `[...document.querySelectorAll('#messages li.tool.result .out')].some(e => e.textContent === 'saved note: milk')`
		for _, tb := range []*tab{bt, a} {
			tb.waitFor("the tool's result", result)
			tb.waitIdle()
			tb.waitFor("the list without the mark", `!document.querySelector('#session-list li[data-id="notes"] .badge')`)
			tb.sameAsStored(srv, "notes", 1)
		}
		if got := a.text("#messages li.approval .outcome"); got != "Answered." {
			t.Errorf("the first tab's card says %q after the other answered it", got)
		}
		a.shot("live-approval-answered")

		// Elsewhere: a new conversation paused on an approval, then
		// answered.
		srv.invoke(t, "errand", `/call save_note {"text":"eggs"}`)
		entry := `document.querySelector('#session-list li[data-id="errand"] .meta')?.textContent`
		a.waitFor("the new conversation marked", entry+`.endsWith('needs approval')`)
		a.shot("live-list-approval")
		srv.decideAll(t, "errand", "allow")
		code, body := srv.do(t, "GET", "/v1/sessions/errand", nil)
		var info struct{ MessageCount int }
		if err := json.Unmarshal(body, &info); code != 200 || err != nil {
			t.Fatalf("session errand: %d %s", code, body)
		}
		a.waitFor("the mark gone and the count grown", fmt.Sprintf(`!%s.endsWith('needs approval') && %s.endsWith(' · %d messages')`, entry, entry, info.MessageCount))
		a.shot("live-list-answered")
	})

	// The follow stream breaks off every few events (a proxy that drops
	// connections): the tab resumes after the last event it had, each
	// time, and ends with the answer as stored, in one bubble.
	t.Run("the follow stream reconnects", func(t *testing.T) {
		srv := startServe(t, "", "--model", "echo:?delay=60ms")
		srv.invoke(t, "flaky", "first question")
		tb := newTab(t, b, desktopW, desktopH, false)
		tb.openLive(slowProxy(t, srv.URL, 5*time.Millisecond, 8)+"/#/c/flaky", 1)
		tb.countBubbles()
		wait := srv.elsewhere(t, "flaky", "an answer that comes in pieces "+strings.Repeat("over a line that drops ", 6))
		if code := wait(); code != 200 {
			t.Fatalf("the turn elsewhere: %d", code)
		}
		tb.waitFor("the whole answer", `document.querySelectorAll('#messages .msg.assistant').length === 2`)
		tb.waitIdle()
		tb.sameAsStored(srv, "flaky", 0)
		if n := eval[int](tb, `window.__drops`); n == 0 {
			t.Errorf("the follow stream never dropped: the test shows nothing")
		}
		if n := eval[int](tb, `window.__added`); n != 1 {
			t.Errorf("%d answer bubbles added for one answer", n)
		}
		tb.shot("live-reconnected")
	})

	// A follow refused with too_many_watchers waits as long as the
	// refusal's retryAfter says (5 s) before asking again, not its own
	// first second: one tab follows a server that allows one watcher per
	// session, and the other tab's follow requests are counted by a
	// proxy. Once the first tab leaves, the second follows.
	t.Run("a refused follow waits its retryAfter", func(t *testing.T) {
		srv := startServe(t, "", "--max-session-watchers", "1")
		srv.invoke(t, "crowded", "first question")
		first := newTab(t, b, desktopW, desktopH, false)
		first.openLive(srv.URL+"/#/c/crowded", 1)

		var mu sync.Mutex
		var asked []time.Time // the second tab's follow requests
		proxy := proxyTo(t, srv.URL, nil, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
			if r.URL.Path == "/v1/sessions/crowded/events" && r.URL.Query().Get("follow") == "1" {
				mu.Lock()
				asked = append(asked, time.Now())
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
		follows := func() []time.Time {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(asked)
		}
		second := newTab(t, b, desktopW, desktopH, false)
		second.open(proxy.URL + "/#/c/crowded")
		second.waitFor("the conversation", `document.querySelectorAll('#messages .msg.assistant').length === 1`)
		deadline := time.Now().Add(stepTimeout)
		for len(follows()) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the second tab never asked to follow; the page: %s", second.where())
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Its own backoff asked again after 1 s and 3 s.
		time.Sleep(4 * time.Second)
		if got := follows(); len(got) != 1 {
			t.Errorf("the refused tab asked to follow %d times within 4 s, at %v after the first; want once (retryAfter is 5 s)", len(got), since(got))
		}
		if eval[string](second, `document.getElementById('app').dataset.live`) == "on" {
			t.Errorf("the second tab follows though the server allows one watcher")
		}

		first.open(srv.URL + "/#/new")
		second.waitFor("the second tab following once the first left", `document.getElementById('app').dataset.live === 'on'`)
		got := follows()
		for i := 1; i < len(got); i++ {
			if d := got[i].Sub(got[i-1]); d < 5*time.Second {
				t.Errorf("the refused tab asked again %v after a refusal that said 5 s (asked at %v after the first)", d, since(got))
			}
		}
	})
}

// testRetryAfterCapped: a follow refused with a retryAfter of a day (a
// server's or a proxy's) is asked again within a minute, not a day later:
// the page's waits are recorded by a setTimeout that notes each delay,
// and the proxy refuses every follow with retryAfter 86400. (live.js
// waited the whole retryAfter, a page frozen for a day.)
func testRetryAfterCapped(t *testing.T, b context.Context) {
	srv := startServe(t, "")
	srv.invoke(t, "capped", "first question")
	proxy := proxyTo(t, srv.URL, nil, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Path == "/v1/sessions/capped/events" && r.URL.Query().Get("follow") == "1" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":"too_many_watchers","message":"come back tomorrow","retryAfter":86400}}`+"\n")
			return
		}
		next.ServeHTTP(w, r)
	})
	tb := newTab(t, b, desktopW, desktopH, false)
	if _, err := chromedp.Call(tb.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `{
		const set = window.setTimeout;
		window.__waits = [];
		window.setTimeout = (f, ms, ...args) => { window.__waits.push(ms); return set(f, ms, ...args); };
	}`}); err != nil {
		t.Fatalf("record the page's waits: %v", err)
	}
	tb.open(proxy.URL + "/#/c/capped")
	// The reconnection backoff alone never waits past 15 s: a longer
	// wait is the refusal's.
	tb.waitFor("the wait after the refusal", `window.__waits.some((ms) => ms > 15000)`)
	if got := eval[[]float64](tb, `window.__waits.filter((ms) => ms > 15000)`); !slices.Equal(got, []float64{60000}) {
		t.Errorf("after a refusal with retryAfter 86400 the page waits %v ms, want [60000] (the cap)", got)
	}
}

// since gives each time of ts as the time after the first.
func since(ts []time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(ts[0]).Round(10*time.Millisecond))
	}
	return out
}
