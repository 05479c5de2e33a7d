package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/internal/spooltest"
)

const (
	e2eSlackSecret = "slack-signing-secret-e2e"
	e2eSlackToken  = "xoxb-e2e"
	e2eTgToken     = "4242:e2e-telegram-token"
	e2eTgSecret    = "telegram_webhook_secret"
	e2eDiscordApp  = "1100000000000000001"
	e2eDiscordBot  = "discord-bot-token-e2e"
)

// The three platforms through spool serve as a process, each against its
// fake: a message in, the answer in the right thread; a Slack approval by
// button; a Slack retry after a restart answered once.
func TestServeChannelsEndToEnd(t *testing.T) {
	slackFake := chatfake.NewSlack(t, e2eSlackToken)
	tgFake := chatfake.NewTelegram(t, e2eTgToken)
	dcFake := chatfake.NewDiscord(t, e2eDiscordApp, e2eDiscordBot)
	pub, priv, _ := ed25519.GenerateKey(nil)
	store := "file:" + filepath.Join(t.TempDir(), "data")
	start := func() *spooltest.Server {
		return spooltest.Serve(t, spooltest.Options{Env: []string{
			"SLACK_SIGNING_SECRET=" + e2eSlackSecret, "SLACK_BOT_TOKEN=" + e2eSlackToken,
			"TELEGRAM_BOT_TOKEN=" + e2eTgToken, "TELEGRAM_WEBHOOK_SECRET=" + e2eTgSecret,
			"DISCORD_PUBLIC_KEY=" + hex.EncodeToString(pub), "DISCORD_APPLICATION_ID=" + e2eDiscordApp, "DISCORD_BOT_TOKEN=" + e2eDiscordBot,
		}}, "--store", store, "--channels", "slack,telegram,discord",
			"--slack-api-url", slackFake.URL, "--telegram-api-url", tgFake.URL, "--discord-api-url", dcFake.URL)
	}
	srv := start()
	post := func(path string, body []byte, sign func(http.Header)) int {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		sign(req.Header)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	slackSign := func(body []byte) func(http.Header) {
		return func(h http.Header) { chatfake.SignSlack(h, e2eSlackSecret, time.Now(), body) }
	}

	// Slack: a mention, answered in its thread.
	ev := chatfake.SlackEvent("T1", "Ev1", map[string]any{"type": "app_mention", "user": "U1", "text": "<@UBOT> hi there", "ts": "1700000000.000100", "channel": "C1"})
	if s := post("/channels/slack/events", ev, slackSign(ev)); s != 200 {
		t.Fatalf("slack event: %d", s)
	}
	chatfake.Eventually(t, 20*time.Second, "the Slack answer", func() bool {
		m := slackFake.Messages()
		return len(m) == 1 && m[0].Text == "echo: hi there" && m[0].ThreadTS == "1700000000.000100"
	})
	// A forged one is refused.
	if s := post("/channels/slack/events", ev, func(h http.Header) { chatfake.SignSlack(h, "wrong", time.Now(), ev) }); s != 401 {
		t.Fatalf("forged slack event: %d", s)
	}

	// Slack: an approval by button (the demo tool save_note).
	ev2 := chatfake.SlackEvent("T1", "Ev2", map[string]any{"type": "app_mention", "user": "U1", "text": `<@UBOT> /call save_note {"text":"e2e"}`, "ts": "1700000100.000100", "channel": "C1"})
	post("/channels/slack/events", ev2, slackSign(ev2))
	var ask chatfake.SlackMessage
	chatfake.Eventually(t, 20*time.Second, "the Slack approval", func() bool {
		m := slackFake.Messages()
		if len(m) == 2 && strings.Contains(m[1].Blocks, "spool_allow") {
			ask = m[1]
			return true
		}
		return false
	})
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	json.Unmarshal([]byte(ask.Blocks), &blocks)
	value := blocks[len(blocks)-1].Elements[0].Value
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "team": map[string]any{"id": "T1"}, "user": map[string]any{"id": "U1"},
		"channel": map[string]any{"id": "C1"}, "container": map[string]any{"type": "message", "message_ts": ask.TS, "channel_id": "C1", "thread_ts": ask.ThreadTS},
		"actions": []map[string]any{{"action_id": "spool_allow", "block_id": "spool_approval", "type": "button", "value": value, "action_ts": "1700000101.000200"}}})
	form := []byte("payload=" + url.QueryEscape(string(payload)))
	req, _ := http.NewRequest("POST", srv.URL+"/channels/slack/interactions", bytes.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	chatfake.SignSlack(req.Header, e2eSlackSecret, time.Now(), form)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("press: %v %v", res, err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("slack messages: %+v", slackFake.Messages())
		}
	}()
	chatfake.Eventually(t, 20*time.Second, "the resumed Slack answer", func() bool {
		for _, m := range slackFake.Messages() {
			if strings.Contains(m.Text, "saved note: e2e") && m.ThreadTS == "1700000100.000100" {
				return true
			}
		}
		return false
	})

	// Telegram: a message, answered as a reply.
	up, _ := json.Marshal(map[string]any{"update_id": 1, "message": map[string]any{"message_id": 5, "date": 1800000000, "text": "hola",
		"chat": map[string]any{"id": 77, "type": "private"}, "from": map[string]any{"id": 99, "is_bot": false, "first_name": "Ann"}}})
	if s := post("/channels/telegram/webhook", up, func(h http.Header) { h.Set("X-Telegram-Bot-Api-Secret-Token", e2eTgSecret) }); s != 200 {
		t.Fatalf("telegram update: %d", s)
	}
	chatfake.Eventually(t, 20*time.Second, "the Telegram answer", func() bool {
		m := tgFake.Messages()
		return len(m) == 1 && m[0].Text == "echo: hola" && m[0].ReplyTo == 5 && m[0].ChatID == 77
	})

	// Discord: the /ask command was registered at start; /ask is answered.
	chatfake.Eventually(t, 20*time.Second, "the /ask command", func() bool { return len(dcFake.Commands()) > 0 })
	in, _ := json.Marshal(map[string]any{"id": "1200000000000000001", "application_id": e2eDiscordApp, "type": 2, "token": "tok-e2e", "version": 1,
		"channel_id": "2200000000000000002", "member": map[string]any{"user": map[string]any{"id": "5500000000000000005", "username": "ann"}},
		"data": map[string]any{"id": "1", "name": "ask", "type": 1, "options": []map[string]any{{"name": "prompt", "type": 3, "value": "salut"}}}})
	dcFake.Deferred("tok-e2e")
	if s := post("/channels/discord/interactions", in, func(h http.Header) { chatfake.SignDiscord(h, priv, time.Now(), in) }); s != 200 {
		t.Fatalf("discord interaction: %d", s)
	}
	chatfake.Eventually(t, 20*time.Second, "the Discord answer", func() bool {
		m := dcFake.Messages()
		return len(m) == 1 && m[0].Content == "echo: salut"
	})

	// A restart, then Slack retries the first event: no second answer.
	srv.Stop(t)
	srv = start()
	if s := post("/channels/slack/events", ev, slackSign(ev)); s != 200 {
		t.Fatalf("retried slack event: %d", s)
	}
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, m := range slackFake.Messages() {
		if m.Text == "echo: hi there" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the retried event was answered %d times", n)
	}
}

func TestServeChannelsRefusals(t *testing.T) {
	all := map[string]string{
		"SLACK_SIGNING_SECRET": "s", "SLACK_BOT_TOKEN": "xoxb-1",
		"TELEGRAM_BOT_TOKEN": "1:x", "TELEGRAM_WEBHOOK_SECRET": "sec",
		"DISCORD_PUBLIC_KEY": strings.Repeat("ab", 32), "DISCORD_APPLICATION_ID": "1", "DISCORD_BOT_TOKEN": "b",
	}
	without := func(name string) map[string]string {
		m := map[string]string{}
		for k, v := range all {
			if k != name {
				m[k] = v
			}
		}
		return m
	}
	cases := []struct {
		vars map[string]string
		args []string
		msg  string
	}{
		{without("SLACK_SIGNING_SECRET"), []string{"--channels", "slack"}, "SLACK_SIGNING_SECRET"},
		{without("SLACK_BOT_TOKEN"), []string{"--channels", "slack"}, "SLACK_BOT_TOKEN"},
		{without("TELEGRAM_WEBHOOK_SECRET"), []string{"--channels", "telegram"}, "TELEGRAM_WEBHOOK_SECRET"},
		{without("TELEGRAM_BOT_TOKEN"), []string{"--channels", "slack,telegram"}, "TELEGRAM_BOT_TOKEN"},
		{without("DISCORD_PUBLIC_KEY"), []string{"--channels", "discord"}, "DISCORD_PUBLIC_KEY"},
		{without("DISCORD_APPLICATION_ID"), []string{"--channels", "discord"}, "DISCORD_APPLICATION_ID"},
		{without("DISCORD_BOT_TOKEN"), []string{"--channels", "discord"}, "DISCORD_BOT_TOKEN"},
		{all, []string{"--channels", "irc"}, `unknown channel "irc"`},
		{all, []string{"--channels", "slack,slack"}, "listed twice"},
		{all, []string{"--channels", "slack", "--slack-api-url", "ftp://x"}, "--slack-api-url"},
		{map[string]string{"DISCORD_PUBLIC_KEY": "zz", "DISCORD_APPLICATION_ID": "1", "DISCORD_BOT_TOKEN": "b"}, []string{"--channels", "discord"}, "DISCORD_PUBLIC_KEY"},
	}
	for _, c := range cases {
		code, _, stderr := newCLI(t, c.vars).run("", append([]string{"serve", "--store", "memory:"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.msg)
		}
	}
}
