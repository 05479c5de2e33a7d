package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel/slack"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
)

const (
	secret = "8f742231b10e8888abcd99yyyzzz85a5"
	token  = "xoxb-test-token"
	team   = "T123"
)

type env struct {
	*chatfake.Harness
	t    *testing.T
	fake *chatfake.Slack
	drv  *slack.Driver
}

type options struct {
	store     store.Store
	fake      *chatfake.Slack
	scope     spool.Scope
	model     model.Model
	approvers []string
	interval  time.Duration
}

func setup(t *testing.T, o options) *env {
	t.Helper()
	if o.fake == nil {
		o.fake = chatfake.NewSlack(t, token)
	}
	if o.interval == 0 {
		o.interval = 10 * time.Millisecond
	}
	drv, err := slack.New(slack.Config{
		SigningSecret: secret, BotToken: token, APIURL: o.fake.URL, Approvers: o.approvers,
		EditInterval: o.interval, HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chatfake.NewHarness(t, chatfake.HarnessOptions{Store: o.store, Model: o.model, Scope: o.scope}, drv)
	return &env{Harness: h, t: t, fake: o.fake, drv: drv}
}

// post sends body to path signed at the time given (zero: unsigned).
func (e *env) post(path, contentType string, body []byte, signed time.Time, hdr ...string) int {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if !signed.IsZero() {
		chatfake.SignSlack(req.Header, secret, signed, body)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func (e *env) event(body []byte, hdr ...string) int {
	return e.post("/channels/slack/events", "application/json", body, time.Now(), hdr...)
}

func mention(ch, ts, thread, user, text string) map[string]any {
	ev := map[string]any{"type": "app_mention", "user": user, "text": "<@UBOT> " + text, "ts": ts, "channel": ch, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return ev
}

func (e *env) wait(what string, cond func([]chatfake.SlackMessage) bool) []chatfake.SlackMessage {
	e.t.Helper()
	var msgs []chatfake.SlackMessage
	chatfake.Eventually(e.t, 10*time.Second, what, func() bool {
		msgs = e.fake.Messages()
		return cond(msgs)
	})
	return msgs
}

func TestMentionAnsweredInThread(t *testing.T) {
	e := setup(t, options{})
	if s := e.event(chatfake.SlackEvent(team, "Ev1", mention("C1", "1700000000.000100", "", "U456", "hello **world**"))); s != 200 {
		t.Fatalf("status %d", s)
	}
	msgs := e.wait("the answer", func(m []chatfake.SlackMessage) bool {
		return len(m) == 1 && m[0].Text == "echo: hello *world*"
	})
	if msgs[0].Channel != "C1" || msgs[0].ThreadTS != "1700000000.000100" {
		t.Fatalf("posted %+v", msgs[0])
	}
	if !strings.Contains(msgs[0].Blocks, `"type":"section"`) || !strings.Contains(msgs[0].Blocks, `"mrkdwn"`) {
		t.Fatalf("blocks %s", msgs[0].Blocks)
	}
	if n := e.Turns(t, "slack.T123.C1.1700000000.000100", ""); n != 1 {
		t.Fatalf("%d turns", n)
	}
	// A reply in the thread, without a mention, goes on in the same
	// session now that the bot is part of the thread.
	reply := map[string]any{"type": "message", "channel_type": "channel", "user": "U456", "text": "more",
		"ts": "1700000005.000100", "thread_ts": "1700000000.000100", "channel": "C1"}
	e.event(chatfake.SlackEvent(team, "Ev2", reply))
	e.wait("the second answer", func(m []chatfake.SlackMessage) bool { return len(m) == 2 && m[1].Text == "echo: more" })
	if n := e.Turns(t, "slack.T123.C1.1700000000.000100", ""); n != 2 {
		t.Fatalf("%d turns", n)
	}
	// A top-level channel message that does not mention the bot is not
	// for it.
	other := map[string]any{"type": "message", "channel_type": "channel", "user": "U456", "text": "lunch?", "ts": "1700000009.000100", "channel": "C1"}
	e.event(chatfake.SlackEvent(team, "Ev3", other))
	time.Sleep(100 * time.Millisecond)
	if len(e.fake.Messages()) != 2 {
		t.Fatalf("answered a message not for the bot: %+v", e.fake.Messages())
	}
}

// TestOthersMentionsKept: the bot's own mention is taken out of the
// text; a mention of someone else is part of the question.
func TestOthersMentionsKept(t *testing.T) {
	e := setup(t, options{})
	e.event(chatfake.SlackEvent(team, "Ev1", mention("C1", "1700000000.000100", "", "U456", "what did <@U789> say?")))
	// The answer is posted, then edited as it streams: wait for its text.
	want := "echo: what did &lt;@U789&gt; say?"
	e.wait("the answer "+want, func(m []chatfake.SlackMessage) bool { return len(m) == 1 && m[0].Text == want })
}

func TestURLVerification(t *testing.T) {
	e := setup(t, options{})
	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	req, _ := http.NewRequest("POST", e.URL+"/channels/slack/events", bytes.NewReader(body))
	chatfake.SignSlack(req.Header, secret, time.Now(), body)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("%d %q", res.StatusCode, b)
	}
}

func TestSignatureRefused(t *testing.T) {
	e := setup(t, options{})
	body := chatfake.SlackEvent(team, "Ev1", mention("C1", "1700000000.000100", "", "U456", "hi"))
	forged := func(h http.Header) { chatfake.SignSlack(h, "not-the-secret", time.Now(), body) }
	cases := map[string]func() int{
		"unsigned": func() int { return e.post("/channels/slack/events", "application/json", body, time.Time{}) },
		"stale": func() int {
			return e.post("/channels/slack/events", "application/json", body, time.Now().Add(-6*time.Minute))
		},
		"future": func() int {
			return e.post("/channels/slack/events", "application/json", body, time.Now().Add(6*time.Minute))
		},
		"forged": func() int {
			req, _ := http.NewRequest("POST", e.URL+"/channels/slack/events", bytes.NewReader(body))
			forged(req.Header)
			res, _ := http.DefaultClient.Do(req)
			res.Body.Close()
			return res.StatusCode
		},
		"tampered": func() int {
			req, _ := http.NewRequest("POST", e.URL+"/channels/slack/events", bytes.NewReader(bytes.Replace(body, []byte("hi"), []byte("rm"), 1)))
			chatfake.SignSlack(req.Header, secret, time.Now(), body)
			res, _ := http.DefaultClient.Do(req)
			res.Body.Close()
			return res.StatusCode
		},
		"interaction": func() int {
			return e.post("/channels/slack/interactions", "application/x-www-form-urlencoded", []byte("payload=%7B%7D"), time.Now().Add(-10*time.Minute))
		},
	}
	for name, c := range cases {
		if s := c(); s != 401 {
			t.Errorf("%s: status %d, want 401", name, s)
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.Untouched(t)
	if len(e.fake.Calls()) != 0 {
		t.Fatalf("a refused request called Slack: %v", e.fake.Calls())
	}
}

func TestRetryAnsweredOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() store.Store {
		st, err := filestore.New(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	fake := chatfake.NewSlack(t, token)
	st := open()
	e := setup(t, options{store: st, fake: fake})
	body := chatfake.SlackEvent(team, "EvR", mention("C9", "1700000100.000100", "", "U456", "once"))
	e.event(body)
	e.event(body, "X-Slack-Retry-Num", "1", "X-Slack-Retry-Reason", "http_timeout")
	// The same message as a message.im-style event, a different event id:
	// still one message.
	e.wait("the answer", func(m []chatfake.SlackMessage) bool { return len(m) == 1 && m[0].Text == "echo: once" })
	e.Stop(t)
	if c, ok := st.(interface{ Close() error }); ok {
		c.Close()
	}

	e2 := setup(t, options{store: open(), fake: fake})
	if s := e2.event(body, "X-Slack-Retry-Num", "2", "X-Slack-Retry-Reason", "http_error"); s != 200 {
		t.Fatalf("retry after restart: %d", s)
	}
	time.Sleep(200 * time.Millisecond)
	if n := e2.Turns(t, "slack.T123.C9.1700000100.000100", ""); n != 1 || len(fake.Messages()) != 1 {
		t.Fatalf("%d turns, messages %+v", n, fake.Messages())
	}
}

func TestBotMessagesIgnored(t *testing.T) {
	e := setup(t, options{})
	own := map[string]any{"type": "message", "channel_type": "im", "user": "UBOT", "text": "echo: x", "ts": "1700000200.000100", "channel": "D1"}
	bot := map[string]any{"type": "message", "channel_type": "im", "subtype": "bot_message", "bot_id": "B9", "text": "beep", "ts": "1700000201.000100", "channel": "D1"}
	botMention := mention("C1", "1700000202.000100", "", "U777", "hi")
	botMention["bot_id"] = "B7"
	edit := map[string]any{"type": "message", "channel_type": "im", "subtype": "message_changed", "ts": "1700000203.000100", "channel": "D1",
		"message": map[string]any{"user": "U456", "text": "edited"}}
	for i, ev := range []map[string]any{own, bot, botMention, edit} {
		if s := e.event(chatfake.SlackEvent(team, "EvB"+string(rune('0'+i)), ev)); s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	// A person's direct message is answered, in its own thread.
	dm := map[string]any{"type": "message", "channel_type": "im", "user": "U456", "text": "hi bot", "ts": "1700000204.000100", "channel": "D1"}
	e.event(chatfake.SlackEvent(team, "EvB9", dm))
	e.wait("the answer", func(m []chatfake.SlackMessage) bool { return len(m) >= 1 })
	time.Sleep(100 * time.Millisecond)
	msgs := e.fake.Messages()
	if len(msgs) != 1 || msgs[0].Text != "echo: hi bot" || msgs[0].ThreadTS != "1700000204.000100" {
		t.Fatalf("messages %+v", msgs)
	}
}

func TestStreamedByEditing(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(15 * time.Millisecond)), interval: 100 * time.Millisecond})
	words := strings.Repeat("word ", 40)
	start := time.Now()
	e.event(chatfake.SlackEvent(team, "EvS", mention("C1", "1700000300.000100", "", "U456", words)))
	msgs := e.wait("the whole answer", func(m []chatfake.SlackMessage) bool {
		return len(m) == 1 && m[0].Text == "echo: "+strings.TrimSpace(words)
	})
	if msgs[0].Edits < 2 {
		t.Fatalf("%d edits: not streamed", msgs[0].Edits)
	}
	// Edits are bounded: at most one per EditInterval (100ms) of the
	// turn, however many pieces of text came (41).
	if bound := int(time.Since(start)/(100*time.Millisecond)) + 2; msgs[0].Edits > bound || msgs[0].Edits > 40 {
		t.Fatalf("%d edits for 41 pieces in %v: not rate-bounded", msgs[0].Edits, time.Since(start))
	}
}

func TestLongAnswerSplit(t *testing.T) {
	e := setup(t, options{})
	var b strings.Builder
	for i := 0; b.Len() < 7000; i++ {
		b.WriteString("Paragraph with some words in it, number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(".\n\n")
	}
	e.event(chatfake.SlackEvent(team, "EvL", mention("C1", "1700000400.000100", "", "U456", b.String())))
	e.wait("three parts", func(m []chatfake.SlackMessage) bool { return len(m) == 3 })
	time.Sleep(100 * time.Millisecond)
	msgs := e.fake.Messages()
	var all []string
	for _, m := range msgs {
		if n := utf8.RuneCountInString(m.Text); n > slack.Limit {
			t.Fatalf("a part of %d characters", n)
		}
		if m.ThreadTS != "1700000400.000100" {
			t.Fatalf("part outside the thread: %+v", m)
		}
		all = append(all, m.Text)
	}
	joined := strings.Join(all, "\n\n")
	if strings.Join(strings.Fields(joined), " ") != strings.Join(strings.Fields("echo: "+b.String()), " ") {
		t.Fatal("the parts do not make the answer")
	}
}

// press clicks the button with action id action on the approval message
// m, as user.
func (e *env) press(m chatfake.SlackMessage, action, user string) int {
	e.t.Helper()
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(m.Blocks), &blocks); err != nil {
		e.t.Fatalf("blocks %s: %v", m.Blocks, err)
	}
	value := ""
	for _, b := range blocks {
		els, _ := b["elements"].([]any)
		for _, el := range els {
			el := el.(map[string]any)
			if el["action_id"] == action {
				value = el["value"].(string)
			}
		}
	}
	if value == "" {
		e.t.Fatalf("no button %s in %s", action, m.Blocks)
	}
	ts := time.Now().Format("1504050000.000000")
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "1337.42", "response_url": "https://hooks.slack.test/actions/1",
		"team": map[string]any{"id": team}, "user": map[string]any{"id": user, "username": "u"},
		"channel":   map[string]any{"id": m.Channel},
		"container": map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "thread_ts": m.ThreadTS},
		"message":   map[string]any{"type": "message", "ts": m.TS, "thread_ts": m.ThreadTS, "text": m.Text, "blocks": blocks},
		"actions":   []map[string]any{{"action_id": action, "block_id": "spool_approval", "type": "button", "value": value, "action_ts": ts}},
	})
	body := []byte("payload=" + url.QueryEscape(string(payload)))
	return e.post("/channels/slack/interactions", "application/x-www-form-urlencoded", body, time.Now())
}

func TestApprovalButtons(t *testing.T) {
	e := setup(t, options{approvers: []string{"UADMIN"}})
	thread := "1700000500.000100"
	e.event(chatfake.SlackEvent(team, "EvA", mention("C1", thread, "", "U456", `/call save_note {"text":"milk"}`)))
	msgs := e.wait("the approval", func(m []chatfake.SlackMessage) bool {
		return len(m) == 1 && strings.Contains(m[0].Blocks, "spool_allow")
	})
	ask := msgs[0]
	if ask.ThreadTS != thread || !strings.Contains(ask.Blocks, "save_note") {
		t.Fatalf("approval %+v", ask)
	}
	// Someone else may not decide.
	if s := e.press(ask, "spool_allow", "U999"); s != 200 {
		t.Fatalf("status %d", s)
	}
	e.wait("the refusal", func(m []chatfake.SlackMessage) bool {
		return len(m) == 2 && m[1].Ephemeral == "U999" && strings.Contains(m[1].Text, "Only the person")
	})
	ps, err := must(e.Agent.Session(context.Background(), "slack.T123.C1."+thread)).PendingApprovals(context.Background())
	if err != nil || len(ps) != 1 {
		t.Fatalf("%d pending after a stranger's press (%v)", len(ps), err)
	}
	// The person who asked allows it: the message says so, the turn
	// resumes, the answer goes into the thread.
	e.press(ask, "spool_allow", "U456")
	msgs = e.wait("the resumed answer", func(m []chatfake.SlackMessage) bool {
		for _, x := range m {
			if strings.Contains(x.Text, "tool save_note returned: saved milk") {
				return true
			}
		}
		return false
	})
	if !strings.Contains(msgs[0].Text, "Allowed by <@U456>") || strings.Contains(msgs[0].Blocks, "spool_allow") {
		t.Fatalf("approval message after the press: %+v", msgs[0])
	}
	// A second press: already decided, told only to the presser.
	e.press(ask, "spool_deny", "U456")
	e.wait("already decided", func(m []chatfake.SlackMessage) bool {
		last := m[len(m)-1]
		return last.Ephemeral == "U456" && strings.Contains(last.Text, "already decided")
	})
	// An approver may decide another's approval.
	e.event(chatfake.SlackEvent(team, "EvA2", mention("C1", "1700000600.000100", "", "U456", `/call save_note {"text":"eggs"}`)))
	msgs = e.wait("the second approval", func(m []chatfake.SlackMessage) bool {
		return strings.Contains(m[len(m)-1].Blocks, "eggs")
	})
	e.press(msgs[len(msgs)-1], "spool_deny", "UADMIN")
	e.wait("the denial's answer", func(m []chatfake.SlackMessage) bool {
		for _, x := range m {
			if strings.Contains(x.Text, "Denied by <@UADMIN>") {
				return true
			}
		}
		return false
	})
	// A value altered by the presser is not valid.
	bad := ask
	bad.Blocks = regexp.MustCompile(`"value":"a:`).ReplaceAllString(ask.Blocks, `"value":"s:`)
	e.press(bad, "spool_allow", "U456")
	// Told to the presser alone; the denied turn's answer may still be
	// posted after it, so any message, not the last, counts.
	e.wait("the invalid button", func(m []chatfake.SlackMessage) bool {
		for _, x := range m {
			if x.Ephemeral == "U456" && strings.Contains(x.Text, "not valid") {
				return true
			}
		}
		return false
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestUserScope(t *testing.T) {
	e := setup(t, options{scope: spool.ScopeUser})
	e.event(chatfake.SlackEvent(team, "EvU", map[string]any{"type": "message", "channel_type": "im", "user": "U456", "text": "mine", "ts": "1700000700.000100", "channel": "D2"}))
	e.wait("the answer", func(m []chatfake.SlackMessage) bool { return len(m) == 1 })
	if n := e.Turns(t, "slack.T123.D2.1700000700.000100", "slack.T123.U456"); n != 1 {
		t.Fatalf("%d turns in the user's session", n)
	}
}

func TestRateLimitAndOutage(t *testing.T) {
	e := setup(t, options{})
	e.fake.FailNext(http.StatusTooManyRequests, 1)
	e.fake.FailNext(http.StatusInternalServerError, 2)
	start := time.Now()
	e.event(chatfake.SlackEvent(team, "Ev429", mention("C1", "1700000800.000100", "", "U456", "patience")))
	e.wait("the answer", func(m []chatfake.SlackMessage) bool { return len(m) == 1 && m[0].Text == "echo: patience" })
	if time.Since(start) < time.Second {
		t.Fatal("the 429's Retry-After was not waited")
	}
	// An outage: every call fails. The turn is stored all the same, and
	// the failure is observed.
	e.fake.FailNext(http.StatusServiceUnavailable, 1000)
	e.event(chatfake.SlackEvent(team, "Ev503", mention("C1", "1700000900.000100", "", "U456", "anyone?")))
	chatfake.Eventually(t, 10*time.Second, "a failed post observed", func() bool {
		return e.Observed(spool.ObserveMessageFailed, "slack", "http_503")
	})
	chatfake.Eventually(t, 10*time.Second, "the stored turn", func() bool {
		s, _ := e.Agent.SessionInfo(context.Background(), "slack.T123.C1.1700000900.000100")
		return s.MessageCount == 2
	})
}

// Shutdown lets a running turn finish and post its answer, while new
// events are answered 503 for Slack to deliver again.
func TestShutdownDrains(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(20 * time.Millisecond))})
	e.event(chatfake.SlackEvent(team, "EvD1", mention("C1", "1700001000.000100", "", "U456", "one two three four five six seven eight")))
	e.wait("the answer to start", func(m []chatfake.SlackMessage) bool { return len(m) == 1 })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- e.Server.Shutdown(ctx)
	}()
	e.drv.Drain() // what Shutdown does first; here before the next event for sure
	if s := e.event(chatfake.SlackEvent(team, "EvD2", mention("C1", "1700001001.000100", "", "U456", "late"))); s != 503 {
		t.Fatalf("an event while draining: %d", s)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	msgs := e.fake.Messages()
	if len(msgs) != 1 || msgs[0].Text != "echo: one two three four five six seven eight" {
		t.Fatalf("the running turn did not finish: %+v", msgs)
	}
	// The refused event was not recorded as taken: its redelivery, to a
	// server that runs, is answered.
	e2 := setup(t, options{store: e.Agent.Store(), fake: e.fake})
	e2.event(chatfake.SlackEvent(team, "EvD2", mention("C1", "1700001001.000100", "", "U456", "late")))
	e2.wait("the redelivered event's answer", func(m []chatfake.SlackMessage) bool { return len(m) == 2 && m[1].Text == "echo: late" })
}

// How long Slack waits for the events endpoint's answer (it wants one
// within 3 seconds): signature, parse, the durable delivery record and
// the queue, on the file store, which syncs the record to disk.
func BenchmarkEventAnswer(b *testing.B) {
	st, err := filestore.New(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fake := chatfake.NewSlack(b, token)
	drv, _ := slack.New(slack.Config{SigningSecret: secret, BotToken: token, APIURL: fake.URL,
		HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler)})
	h := chatfake.NewHarness(b, chatfake.HarnessOptions{Store: st}, drv)
	b.ResetTimer()
	for i := range b.N {
		body := chatfake.SlackEvent(team, fmt.Sprintf("EvB%d", i), mention("C1", fmt.Sprintf("1700002000.%06d", i), "", "U456", "hi"))
		req, _ := http.NewRequest("POST", h.URL+"/channels/slack/events", bytes.NewReader(body))
		chatfake.SignSlack(req.Header, secret, time.Now(), body)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("%v %v", res, err)
		}
		res.Body.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/answer")
}

// A person's message that shares a file (subtype file_share) is answered
// by its text, and a reply in the bot's thread that is also sent to the
// channel (thread_broadcast) goes on in the thread's session: both are
// people's messages, which were ignored for having a subtype.
func TestFileShareAndBroadcastAnswered(t *testing.T) {
	e := setup(t, options{})
	dm := map[string]any{"type": "message", "channel_type": "im", "subtype": "file_share", "user": "U456", "text": "what is in this?",
		"ts": "1700000300.000100", "channel": "D1", "files": []any{map[string]any{"id": "F1", "name": "a.png"}}}
	e.event(chatfake.SlackEvent(team, "EvF1", dm))
	e.wait("the answer to the file's message", func(m []chatfake.SlackMessage) bool {
		return len(m) == 1 && m[0].Text == "echo: what is in this?"
	})
	e.event(chatfake.SlackEvent(team, "EvF2", mention("C1", "1700000310.000100", "", "U456", "hello")))
	e.wait("the answer in the thread", func(m []chatfake.SlackMessage) bool { return len(m) == 2 && m[1].Text == "echo: hello" })
	broadcast := map[string]any{"type": "message", "channel_type": "channel", "subtype": "thread_broadcast", "user": "U456", "text": "and more",
		"ts": "1700000320.000100", "thread_ts": "1700000310.000100", "channel": "C1"}
	e.event(chatfake.SlackEvent(team, "EvF3", broadcast))
	msgs := e.wait("the answer to the broadcast reply", func(m []chatfake.SlackMessage) bool { return len(m) == 3 && m[2].Text == "echo: and more" })
	if msgs[2].ThreadTS != "1700000310.000100" {
		t.Fatalf("the reply's answer went to %+v", msgs[2])
	}
	if n := e.Turns(t, "slack.T123.C1.1700000310.000100", ""); n != 2 {
		t.Fatalf("%d turns in the thread's session", n)
	}
}

// TestDeletedAnswerPostedAnew: a person deleted the answer while it
// streamed. The rest arrives as a new message in the thread with the
// whole answer; every later chat.update was message_not_found, and the
// answer lost but for its start.
func TestDeletedAnswerPostedAnew(t *testing.T) {
	m := chatfake.NewPaused("First words.", " And the rest.")
	e := setup(t, options{model: m})
	e.event(chatfake.SlackEvent(team, "EvDel", mention("C1", "1700000400.000100", "", "U456", "hello")))
	msgs := e.wait("the answer's start", func(m []chatfake.SlackMessage) bool {
		return len(m) == 1 && m[0].Text == "First words."
	})
	e.fake.Delete(msgs[0].TS)
	m.Resume()
	e.wait("the answer's end", func(m []chatfake.SlackMessage) bool {
		return len(m) > 0 && strings.Contains(m[len(m)-1].Text, "rest")
	})
	e.Stop(t) // the reply is done
	msgs = e.fake.Messages()
	if len(msgs) != 1 || msgs[0].Text != "First words. And the rest." || msgs[0].ThreadTS != "1700000400.000100" {
		t.Fatalf("messages %+v; calls %v", msgs, e.fake.Calls())
	}
}
