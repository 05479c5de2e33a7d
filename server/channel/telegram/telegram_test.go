package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel/telegram"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
)

const (
	token  = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	secret = "s3cr3t_token-for-webhooks"
)

type env struct {
	*chatfake.Harness
	t    *testing.T
	fake *chatfake.Telegram
}

type options struct {
	store    store.Store
	fake     *chatfake.Telegram
	model    model.Model
	interval time.Duration
}

func setup(t *testing.T, o options) *env {
	t.Helper()
	if o.fake == nil {
		o.fake = chatfake.NewTelegram(t, token)
	}
	if o.interval == 0 {
		o.interval = 10 * time.Millisecond
	}
	drv, err := telegram.New(telegram.Config{
		Token: token, WebhookSecret: secret, APIURL: o.fake.URL, EditInterval: o.interval,
		HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chatfake.NewHarness(t, chatfake.HarnessOptions{Store: o.store, Model: o.model}, drv)
	return &env{Harness: h, t: t, fake: o.fake}
}

func (e *env) send(update any, secretToken string) int {
	e.t.Helper()
	b, _ := json.Marshal(update)
	req, _ := http.NewRequest("POST", e.URL+"/channels/telegram/webhook", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if secretToken != "" {
		req.Header.Set(telegram.SecretHeader, secretToken)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func message(update, chat int64, id int, from int64, text string) map[string]any {
	return map[string]any{"update_id": update, "message": map[string]any{
		"message_id": id, "date": 1800000000 + id, "text": text,
		"chat": map[string]any{"id": chat, "type": "private"},
		"from": map[string]any{"id": from, "is_bot": false, "first_name": "Ann", "username": "ann"},
	}}
}

func press(update int64, cb string, m chatfake.TelegramMessage, from int64, button int) map[string]any {
	return map[string]any{"update_id": update, "callback_query": map[string]any{
		"id": cb, "chat_instance": "42", "data": m.Keyboard[0][button].Data,
		"from":    map[string]any{"id": from, "is_bot": false, "first_name": "Ann", "username": "ann"},
		"message": map[string]any{"message_id": m.ID, "date": 1800000000, "chat": map[string]any{"id": m.ChatID, "type": "private"}, "text": "Approval needed: the tool save_note wants to run with"},
	}}
}

func (e *env) wait(what string, cond func([]chatfake.TelegramMessage) bool) []chatfake.TelegramMessage {
	e.t.Helper()
	var msgs []chatfake.TelegramMessage
	chatfake.Eventually(e.t, 10*time.Second, what, func() bool {
		msgs = e.fake.Messages()
		return cond(msgs)
	})
	return msgs
}

func TestMessageAnsweredAsReply(t *testing.T) {
	e := setup(t, options{})
	if s := e.send(message(1, 555, 10, 777, "/ask hello <b> & **you**"), secret); s != 200 {
		t.Fatalf("status %d", s)
	}
	msgs := e.wait("the answer", func(m []chatfake.TelegramMessage) bool {
		return len(m) == 1 && m[0].Text == "echo: hello &lt;b&gt; &amp; <b>you</b>"
	})
	if msgs[0].ChatID != 555 || msgs[0].ReplyTo != 10 || msgs[0].ParseMode != "HTML" {
		t.Fatalf("sent %+v", msgs[0])
	}
	if e.Turns(t, "telegram.555", "") != 1 {
		t.Fatal("no session telegram.555")
	}
	// A forum topic is a session of its own, answered in the topic.
	topic := message(2, -100200, 11, 777, "in a topic")
	topic["message"].(map[string]any)["message_thread_id"] = 7
	topic["message"].(map[string]any)["is_topic_message"] = true
	e.send(topic, secret)
	msgs = e.wait("the topic answer", func(m []chatfake.TelegramMessage) bool { return len(m) == 2 })
	if msgs[1].ThreadID != 7 || msgs[1].ChatID != -100200 || e.Turns(t, "telegram.-100200.7", "") != 1 {
		t.Fatalf("topic answer %+v", msgs[1])
	}
}

func TestSecretRefused(t *testing.T) {
	e := setup(t, options{})
	for _, s := range []string{"", "wrong", secret + "x"} {
		if got := e.send(message(1, 555, 10, 777, "hi"), s); got != 401 {
			t.Fatalf("secret %q: status %d", s, got)
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.Untouched(t)
	if len(e.fake.Calls()) != 0 {
		t.Fatal("a refused update touched something")
	}
}

func TestRedeliveryAnsweredOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	fake := chatfake.NewTelegram(t, token)
	st, _ := filestore.New(t.Context(), dir)
	e := setup(t, options{store: st, fake: fake})
	up := message(9, 555, 30, 777, "once")
	e.send(up, secret)
	e.send(up, secret)
	e.wait("the answer", func(m []chatfake.TelegramMessage) bool { return len(m) == 1 })
	e.Stop(t)
	st.Close()
	st2, _ := filestore.New(t.Context(), dir)
	e2 := setup(t, options{store: st2, fake: fake})
	if s := e2.send(up, secret); s != 200 {
		t.Fatalf("status %d", s)
	}
	time.Sleep(200 * time.Millisecond)
	if n := e2.Turns(t, "telegram.555", ""); n != 1 || len(fake.Messages()) != 1 {
		t.Fatalf("%d turns, %d messages", n, len(fake.Messages()))
	}
}

func TestBotsIgnored(t *testing.T) {
	e := setup(t, options{})
	own := message(1, 555, 10, 123456, "from myself")
	bot := message(2, 555, 11, 999, "from a bot")
	bot["message"].(map[string]any)["from"].(map[string]any)["is_bot"] = true
	edited := map[string]any{"update_id": 3, "edited_message": message(0, 555, 12, 777, "edit")["message"]}
	for _, u := range []map[string]any{own, bot, edited} {
		if s := e.send(u, secret); s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	time.Sleep(150 * time.Millisecond)
	if len(e.fake.Calls()) != 0 || e.Turns(t, "telegram.555", "") != 0 {
		t.Fatalf("answered a bot: %v", e.fake.Calls())
	}
}

func TestStreamedAndSplit(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(2 * time.Millisecond)), interval: 60 * time.Millisecond})
	// Characters outside the BMP count twice in Telegram's UTF-16 limit.
	long := strings.Repeat("emoji 😀 and <tag> & text ", 130)
	e.send(message(1, 555, 10, 777, long), secret)
	msgs := e.wait("the whole answer", func(m []chatfake.TelegramMessage) bool {
		if len(m) < 2 {
			return false
		}
		var all strings.Builder
		for _, x := range m {
			all.WriteString(x.Text + " ")
		}
		return strings.Count(all.String(), "😀") == 130
	})
	edits := 0
	for _, m := range msgs {
		edits += m.Edits
		if m.ReplyTo != 10 {
			t.Fatalf("part not a reply: %+v", m)
		}
	}
	if edits == 0 {
		t.Fatal("not streamed by editing")
	}
}

func TestApprovalKeyboard(t *testing.T) {
	e := setup(t, options{})
	e.send(message(1, 555, 10, 777, `/call save_note {"text":"milk"}`), secret)
	msgs := e.wait("the keyboard", func(m []chatfake.TelegramMessage) bool { return len(m) == 1 && len(m[0].Keyboard) == 1 })
	ask := msgs[0]
	if len(ask.Keyboard[0]) != 3 || ask.Keyboard[0][0].Text != "Allow" || ask.Keyboard[0][2].Text != "Deny" {
		t.Fatalf("keyboard %+v", ask.Keyboard)
	}
	// A stranger's press is refused with a notice.
	e.send(press(2, "cb1", ask, 888, 0), secret)
	chatfake.Eventually(t, 5*time.Second, "the refusal", func() bool {
		a := e.fake.Answers()
		return len(a) == 1 && a[0].ID == "cb1" && strings.Contains(a[0].Text, "Only the person")
	})
	// The asker allows: the keyboard goes, the answer follows.
	e.send(press(3, "cb2", ask, 777, 0), secret)
	msgs = e.wait("the resumed answer", func(m []chatfake.TelegramMessage) bool {
		return len(m) == 2 && strings.Contains(m[1].Text, "tool save_note returned: saved milk")
	})
	if len(msgs[0].Keyboard) != 0 || !strings.Contains(msgs[0].Text, "Allowed</b> by @ann") {
		t.Fatalf("approval after the press %+v", msgs[0])
	}
	// The same callback redelivered: nothing more. A second press: already
	// decided.
	e.send(press(3, "cb2", ask, 777, 0), secret)
	e.send(press(4, "cb3", ask, 777, 2), secret)
	chatfake.Eventually(t, 5*time.Second, "already decided", func() bool {
		for _, a := range e.fake.Answers() {
			if a.ID == "cb3" && strings.Contains(a.Text, "already decided") {
				return true
			}
		}
		return false
	})
	if n := len(e.fake.Messages()); n != 2 {
		t.Fatalf("%d messages", n)
	}
}

func TestRateLimitAndOutage(t *testing.T) {
	e := setup(t, options{})
	e.fake.FailNext(http.StatusTooManyRequests, 1)
	e.fake.FailNext(http.StatusBadGateway, 1)
	start := time.Now()
	e.send(message(1, 555, 10, 777, "patience"), secret)
	e.wait("the answer", func(m []chatfake.TelegramMessage) bool { return len(m) == 1 })
	if time.Since(start) < time.Second {
		t.Fatal("retry_after was not waited")
	}
	e.fake.FailNext(http.StatusInternalServerError, 1000)
	e.send(message(2, 556, 11, 777, "down?"), secret)
	chatfake.Eventually(t, 10*time.Second, "the failure observed", func() bool {
		return e.Observed(spool.ObserveMessageFailed, "telegram", "http_500")
	})
	chatfake.Eventually(t, 10*time.Second, "the stored turn", func() bool {
		info, err := e.Agent.SessionInfo(context.Background(), "telegram.556")
		return err == nil && info.MessageCount == 2
	})
}

// An answer the provider stopped short is posted, and then said to be
// incomplete.
func TestIncompleteAnswerSaidSo(t *testing.T) {
	cut := echo.New(echo.WithScript(func(*model.Request) []model.Event {
		return []model.Event{{Kind: model.EventText, Text: "once upon a"}, {Kind: model.EventStop, Stop: model.StopLength}}
	}))
	e := setup(t, options{model: cut})
	e.send(message(1, 555, 10, 777, "a story"), secret)
	msgs := e.wait("the answer and the note", func(m []chatfake.TelegramMessage) bool { return len(m) == 2 })
	if msgs[0].Text != "once upon a" || !strings.HasPrefix(msgs[1].Text, "(incomplete: the answer reached the model's output token limit") {
		t.Fatalf("sent %q, %q", msgs[0].Text, msgs[1].Text)
	}
}

// TestTableStreamedAndSplit: Telegram renders no Markdown table, so a
// model's table arrives as a <pre> block of aligned columns (its cells
// escaped, a wide character counting two columns), also in every message
// of an answer split inside the table; the fake refuses HTML that does
// not parse.
func TestTableStreamedAndSplit(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(time.Millisecond)), interval: 20 * time.Millisecond})
	var b strings.Builder
	b.WriteString("Cities:\n\n| City | Note |\n|---|---|\n")
	for i := range 200 {
		fmt.Fprintf(&b, "| 東京 %03d | a<b & c |\n", i)
	}
	b.WriteString("\nDone.")
	e.send(message(1, 555, 10, 777, b.String()), secret)
	msgs := e.wait("the whole table", func(m []chatfake.TelegramMessage) bool {
		return len(m) >= 2 && strings.HasSuffix(m[len(m)-1].Text, "Done.")
	})
	rows := 0
	for i, m := range msgs {
		if strings.Contains(m.Text, "|") || strings.Contains(m.Text, "東京") && !strings.Contains(m.Text, "<pre>") {
			t.Fatalf("message %d is no table block:\n%s", i, m.Text)
		}
		for line := range strings.Lines(m.Text) {
			line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "<pre>"), "</pre>")
			if strings.HasPrefix(line, "東京") {
				rows++
				// 東京 is four columns wide, as "City" is.
				if len(line) != len("東京 000  a&lt;b &amp; c") || !strings.HasSuffix(line, "  a&lt;b &amp; c") {
					t.Fatalf("a row not aligned: %q", line)
				}
			}
		}
	}
	if rows != 200 || !strings.HasPrefix(msgs[0].Text, "echo: Cities:\n\n<pre>City      Note\n--------  -------\n東京 000  a&lt;b &amp; c\n") {
		t.Fatalf("%d rows; first message:\n%s", rows, msgs[0].Text)
	}
}

// An answer the platform refuses is said not to have been sent, never
// "(no answer)": the short note may go through where the answer did not.
func TestRefusedAnswerSaidSo(t *testing.T) {
	// Every attempt at the answer is refused (how many there are depends
	// on how far behind the outbox is), the note is not.
	e := setup(t, options{interval: time.Hour})
	e.fake.Refuse("echo: hello")
	e.send(message(1, 555, 10, 777, "hello"), secret)
	msgs := e.wait("the note", func(m []chatfake.TelegramMessage) bool { return len(m) == 1 })
	if msgs[0].Text != "Sorry, the answer could not be sent here." {
		t.Fatalf("sent %q after the answer was refused; calls %v", msgs[0].Text, e.fake.Calls())
	}
}

// A rate-limited platform never holds the turn: the answer is read and
// recorded while Telegram says to wait (three 429s, a second each), and
// reaches the chat once it lets the posts through.
func TestRateLimitDoesNotHoldTheTurn(t *testing.T) {
	e := setup(t, options{})
	e.fake.FailNext(http.StatusTooManyRequests, 3)
	e.send(message(1, 555, 10, 777, "patience"), secret)
	chatfake.Eventually(t, 10*time.Second, "the stored turn", func() bool {
		info, err := e.Agent.SessionInfo(context.Background(), "telegram.555")
		return err == nil && info.MessageCount == 2
	})
	if n := len(e.fake.Messages()); n != 0 {
		t.Fatalf("the turn was recorded after %d messages reached the chat; it waited on the platform", n)
	}
	msgs := e.wait("the answer", func(m []chatfake.TelegramMessage) bool { return len(m) == 1 })
	if msgs[0].Text != "echo: patience" {
		t.Fatalf("sent %q", msgs[0].Text)
	}
}

// TestDeletedAnswerPostedAnew: a person deleted the answer while it
// streamed. The rest arrives as a new message with the whole answer;
// every later edit was refused ("message to edit not found"), and the
// answer lost but for its start.
func TestDeletedAnswerPostedAnew(t *testing.T) {
	m := chatfake.NewPaused("First words.", " And the rest.")
	e := setup(t, options{model: m})
	e.send(message(1, 555, 10, 777, "hello"), secret)
	msgs := e.wait("the answer's start", func(m []chatfake.TelegramMessage) bool {
		return len(m) == 1 && m[0].Text == "First words."
	})
	e.fake.Delete(msgs[0].ID)
	m.Resume()
	e.wait("the answer's end", func(m []chatfake.TelegramMessage) bool {
		return len(m) > 0 && strings.Contains(m[len(m)-1].Text, "rest")
	})
	e.Stop(t) // the reply is done
	msgs = e.fake.Messages()
	if len(msgs) != 1 || msgs[0].Text != "First words. And the rest." || msgs[0].ReplyTo != 10 {
		t.Fatalf("messages %+v; calls %v", msgs, e.fake.Calls())
	}
}
