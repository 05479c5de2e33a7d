package discord_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/chatfake"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel/discord"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
)

const (
	app      = "1100000000000000001"
	botToken = "MTEw.bot-token.for-tests"
	channel1 = "2200000000000000002"
)

var pub, priv, _ = ed25519.GenerateKey(nil)

type env struct {
	*chatfake.Harness
	t    *testing.T
	fake *chatfake.Discord
	drv  *discord.Driver
}

type options struct {
	store    store.Store
	fake     *chatfake.Discord
	model    model.Model
	interval time.Duration
}

func setup(t *testing.T, o options) *env {
	t.Helper()
	if o.fake == nil {
		o.fake = chatfake.NewDiscord(t, app, botToken)
	}
	if o.interval == 0 {
		o.interval = 10 * time.Millisecond
	}
	drv, err := discord.New(discord.Config{
		PublicKey: hex.EncodeToString(pub), ApplicationID: app, BotToken: botToken, APIURL: o.fake.URL,
		EditInterval: o.interval, HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chatfake.NewHarness(t, chatfake.HarnessOptions{Store: o.store, Model: o.model}, drv)
	return &env{Harness: h, t: t, fake: o.fake, drv: drv}
}

var seq atomic.Int64

// snowflake makes a Discord id for now.
func snowflake() string {
	return strconv.FormatInt((time.Now().UnixMilli()-1420070400000)<<22|seq.Add(1)&0xfff, 10)
}

func member(user string) map[string]any {
	return map[string]any{"user": map[string]any{"id": user, "username": "u" + user}, "roles": []string{}}
}

func command(id, token, user, prompt string) map[string]any {
	return map[string]any{"id": id, "application_id": app, "type": 2, "token": token, "version": 1,
		"channel_id": channel1, "guild_id": "3300000000000000003", "member": member(user),
		"data": map[string]any{"id": "4400000000000000004", "name": "ask", "type": 1,
			"options": []map[string]any{{"name": "prompt", "type": 3, "value": prompt}}}}
}

// interact posts an interaction signed at the given time and returns the
// status and the interaction response.
func (e *env) interact(in any, at time.Time, key ed25519.PrivateKey) (int, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest("POST", e.URL+"/channels/discord/interactions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != nil {
		chatfake.SignDiscord(req.Header, key, at, b)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var out map[string]any
	json.Unmarshal(body, &out)
	return res.StatusCode, out
}

// ask runs /ask as user and tells the fake about the deferred response.
func (e *env) ask(user, prompt string) string {
	e.t.Helper()
	tok := "itoken-" + snowflake()
	// Discord makes the interaction, and so its original response,
	// before it calls the endpoint.
	e.fake.Deferred(tok)
	s, res := e.interact(command(snowflake(), tok, user, prompt), time.Now(), priv)
	if s != 200 || res["type"] != float64(5) {
		e.t.Fatalf("/ask: %d %v", s, res)
	}
	return tok
}

func (e *env) wait(what string, cond func([]chatfake.DiscordMessage) bool) []chatfake.DiscordMessage {
	e.t.Helper()
	var msgs []chatfake.DiscordMessage
	chatfake.Eventually(e.t, 10*time.Second, what, func() bool {
		msgs = e.fake.Messages()
		return cond(msgs)
	})
	return msgs
}

func TestPing(t *testing.T) {
	e := setup(t, options{})
	s, res := e.interact(map[string]any{"id": snowflake(), "application_id": app, "type": 1, "token": "t", "version": 1}, time.Now(), priv)
	if s != 200 || res["type"] != float64(1) {
		t.Fatalf("%d %v", s, res)
	}
}

func TestAskAnswered(t *testing.T) {
	e := setup(t, options{})
	tok := e.ask("5500000000000000005", "hello @everyone")
	msgs := e.wait("the answer", func(m []chatfake.DiscordMessage) bool {
		return len(m) == 1 && m[0].Content == "echo: hello @everyone"
	})
	if msgs[0].Token != tok {
		t.Fatalf("answer %+v", msgs[0])
	}
	if e.Turns(t, "discord."+channel1, "") != 1 {
		t.Fatal("no session for the channel")
	}
	calls := strings.Join(e.fake.Calls(), "\n")
	if !strings.Contains(calls, "PATCH /webhooks/"+app+"/"+tok+"/messages/@original") {
		t.Fatalf("calls %s", calls)
	}
}

func TestSignatureRefused(t *testing.T) {
	e := setup(t, options{})
	_, other, _ := ed25519.GenerateKey(nil)
	in := command(snowflake(), "tok", "5500000000000000005", "hi")
	for name, c := range map[string]struct {
		at  time.Time
		key ed25519.PrivateKey
	}{
		"unsigned": {time.Now(), nil},
		"forged":   {time.Now(), other},
		"stale":    {time.Now().Add(-10 * time.Minute), priv},
	} {
		if s, _ := e.interact(in, c.at, c.key); s != 401 {
			t.Errorf("%s: status %d", name, s)
		}
	}
	time.Sleep(50 * time.Millisecond)
	e.Untouched(t)
	if len(e.fake.Calls()) != 0 {
		t.Fatal("a refused interaction called Discord")
	}
}

func TestInteractionOnceAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	fake := chatfake.NewDiscord(t, app, botToken)
	st, _ := filestore.New(t.Context(), dir)
	e := setup(t, options{store: st, fake: fake})
	in := command(snowflake(), "tok-once", "5500000000000000005", "once")
	fake.Deferred("tok-once")
	e.interact(in, time.Now(), priv)
	e.interact(in, time.Now(), priv)
	e.wait("the answer", func(m []chatfake.DiscordMessage) bool { return m[0].Content == "echo: once" })
	e.Stop(t)
	st.Close()
	st2, _ := filestore.New(t.Context(), dir)
	e2 := setup(t, options{store: st2, fake: fake})
	e2.interact(in, time.Now(), priv)
	time.Sleep(200 * time.Millisecond)
	if n := e2.Turns(t, "discord."+channel1, ""); n != 1 {
		t.Fatalf("%d turns", n)
	}
}

func TestBotsIgnored(t *testing.T) {
	e := setup(t, options{})
	in := command(snowflake(), "tok-bot", "5500000000000000005", "hi")
	in["member"].(map[string]any)["user"].(map[string]any)["bot"] = true
	s, res := e.interact(in, time.Now(), priv)
	if s != 200 || res["type"] != float64(4) {
		t.Fatalf("%d %v", s, res)
	}
	time.Sleep(100 * time.Millisecond)
	if e.Turns(t, "discord."+channel1, "") != 0 || len(e.fake.Calls()) != 0 {
		t.Fatal("answered a bot")
	}
}

func TestStreamedAndSplit(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(2 * time.Millisecond)), interval: 50 * time.Millisecond})
	long := strings.Repeat("word ", 900) // 4500 characters: three messages
	e.ask("5500000000000000005", long)
	msgs := e.wait("three parts", func(m []chatfake.DiscordMessage) bool {
		total := 0
		for _, x := range m {
			total += strings.Count(x.Content, "word")
		}
		return len(m) == 3 && total == 900
	})
	edits := 0
	for _, m := range msgs {
		if utf8.RuneCountInString(m.Content) > discord.Limit {
			t.Fatalf("a part of %d characters", utf8.RuneCountInString(m.Content))
		}
		edits += m.Edits
	}
	if edits < 3 {
		t.Fatalf("%d edits: not streamed", edits)
	}
}

// press presses button (0 allow, 1 always, 2 deny) of message m as user.
func (e *env) press(m chatfake.DiscordMessage, button int, user string) (int, map[string]any) {
	e.t.Helper()
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(m.Components), &rows); err != nil || len(rows) != 1 || len(rows[0].Components) != 3 {
		e.t.Fatalf("components %s", m.Components)
	}
	tok := "ptoken-" + snowflake()
	e.fake.Pressed(tok, m.ID)
	return e.interact(map[string]any{"id": snowflake(), "application_id": app, "type": 3, "token": tok, "version": 1,
		"channel_id": channel1, "member": member(user),
		"message": map[string]any{"id": m.ID, "channel_id": channel1, "content": m.Content},
		"data":    map[string]any{"custom_id": rows[0].Components[button].CustomID, "component_type": 2}}, time.Now(), priv)
}

func TestApprovalButtons(t *testing.T) {
	e := setup(t, options{})
	e.ask("5500000000000000005", `/call save_note {"text":"milk"}`)
	msgs := e.wait("the buttons", func(m []chatfake.DiscordMessage) bool { return len(m) == 1 && m[0].Components != "" })
	ask := msgs[0]
	if !strings.Contains(ask.Content, "save_note") {
		t.Fatalf("approval %+v", ask)
	}
	s, res := e.press(ask, 0, "6600000000000000006")
	if s != 200 || res["type"] != float64(4) || !strings.Contains(res["data"].(map[string]any)["content"].(string), "Only the person") {
		t.Fatalf("stranger: %d %v", s, res)
	}
	if s, res = e.press(ask, 0, "5500000000000000005"); s != 200 || res["type"] != float64(6) {
		t.Fatalf("asker: %d %v", s, res)
	}
	msgs = e.wait("the resumed answer", func(m []chatfake.DiscordMessage) bool {
		return len(m) == 2 && strings.Contains(m[1].Content, "tool save_note returned: saved milk")
	})
	if !strings.Contains(msgs[0].Content, "**Allowed** by <@5500000000000000005>") || msgs[0].Components != "[]" {
		t.Fatalf("buttons' message after the press %+v", msgs[0])
	}
	e.press(ask, 2, "5500000000000000005")
	e.wait("already decided", func(m []chatfake.DiscordMessage) bool {
		last := m[len(m)-1]
		return last.Ephemeral && strings.Contains(last.Content, "already decided")
	})
}

func TestRateLimitAndOutage(t *testing.T) {
	e := setup(t, options{})
	e.fake.FailNext(http.StatusTooManyRequests, 1)
	e.fake.FailNext(http.StatusInternalServerError, 1)
	start := time.Now()
	e.ask("5500000000000000005", "patience")
	e.wait("the answer", func(m []chatfake.DiscordMessage) bool { return m[0].Content == "echo: patience" })
	if time.Since(start) < time.Second {
		t.Fatal("Retry-After was not waited")
	}
	e.fake.FailNext(http.StatusBadGateway, 1000)
	e.ask("5500000000000000005", "down?")
	chatfake.Eventually(t, 10*time.Second, "the failure observed", func() bool {
		return e.Observed(spool.ObserveMessageFailed, "discord", "http_502")
	})
	chatfake.Eventually(t, 10*time.Second, "the stored turn", func() bool {
		return e.Turns(t, "discord."+channel1, "") == 2
	})
}

func TestRegisterCommands(t *testing.T) {
	e := setup(t, options{})
	if err := e.drv.RegisterCommands(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cmds []struct {
		Name    string `json:"name"`
		Options []struct {
			Name     string `json:"name"`
			Type     int    `json:"type"`
			Required bool   `json:"required"`
		} `json:"options"`
	}
	if err := json.Unmarshal(e.fake.Commands(), &cmds); err != nil || len(cmds) != 1 || cmds[0].Name != "ask" ||
		cmds[0].Options[0].Name != "prompt" || cmds[0].Options[0].Type != 3 || !cmds[0].Options[0].Required {
		t.Fatalf("commands %s (%v)", e.fake.Commands(), err)
	}
}

// TestTurnEndsWhileTheTokenLasts: an interaction's token posts for 15
// minutes after Discord made the interaction, so a turn with a longer
// TurnTimeout (spool serve --turn-timeout 30m) stops in time to say so,
// instead of streaming on into calls Discord refuses.
func TestTurnEndsWhileTheTokenLasts(t *testing.T) {
	fake := chatfake.NewDiscord(t, app, botToken)
	drv, err := discord.New(discord.Config{
		PublicKey: hex.EncodeToString(pub), ApplicationID: app, BotToken: botToken, APIURL: fake.URL,
		EditInterval: 10 * time.Millisecond, TurnTimeout: time.Hour, HTTPClient: chatfake.Client(), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := chatfake.NewHarness(t, chatfake.HarnessOptions{Model: echo.New(echo.WithDelay(100 * time.Millisecond))}, drv)
	e := &env{Harness: h, t: t, fake: fake, drv: drv}
	// Made 14 minutes and 29 seconds ago (its snowflake says so) and
	// delivered now: its token has 31 seconds left, and the answer would
	// stream for two minutes.
	made := time.Now().Add(-(14*time.Minute + 29*time.Second))
	id := strconv.FormatInt((made.UnixMilli()-1420070400000)<<22|seq.Add(1)&0xfff, 10)
	tok := "itoken-old"
	fake.Deferred(tok)
	s, res := e.interact(command(id, tok, "5500000000000000005", strings.Repeat("w ", 1200)), time.Now(), priv)
	if s != 200 || res["type"] != float64(5) {
		t.Fatalf("/ask: %d %v", s, res)
	}
	msgs := e.wait("the answer stopped before the token expires", func(m []chatfake.DiscordMessage) bool {
		return len(m) > 1 && strings.Contains(m[len(m)-1].Content, "stopped")
	})
	if n := strings.Count(msgs[0].Content, "w"); n >= 1200 {
		t.Fatalf("the whole answer (%d words) was posted", n)
	}
}

// An /ask once the server shut down (as a restart does) is answered with
// a private note to ask again: Discord never delivers an interaction
// again, and the 503 the server gave it (first the server's own, then
// the driver's) only showed "This interaction failed".
func TestShutdownSaysAskAgain(t *testing.T) {
	e := setup(t, options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s, res := e.interact(command(snowflake(), "itoken-late", "5500000000000000005", "hello"), time.Now(), priv)
	data, _ := res["data"].(map[string]any)
	content, _ := data["content"].(string)
	if s != 200 || res["type"] != float64(4) || data["flags"] != float64(64) || !strings.Contains(content, "Ask again") {
		t.Fatalf("an /ask after shutdown: %d %v", s, res)
	}
	if n := len(e.fake.Messages()); n != 0 {
		t.Fatalf("%d messages posted", n)
	}
}

// TestFirstEditBeforeTheDeferredMessage: Discord makes the deferred
// "thinking…" message once it has read the interaction's response, so a
// quick answer's first edit of it can arrive first and get 404 Unknown
// Message (10008). The driver tries that edit again, shortly; the answer
// was lost, and "(no answer)" shown in its place.
func TestFirstEditBeforeTheDeferredMessage(t *testing.T) {
	e := setup(t, options{})
	e.fake.Lag(300 * time.Millisecond)
	tok := e.ask("5500000000000000005", "quick")
	// The answer streams: an edit with its first words may come before
	// the one with all of it.
	msgs := e.wait("the answer in the original response", func(m []chatfake.DiscordMessage) bool {
		return len(m) >= 1 && m[0].Content == "echo: quick"
	})
	if len(msgs) != 1 || msgs[0].Token != tok {
		t.Fatalf("messages %+v", msgs)
	}
	if e.Observed(spool.ObserveMessageFailed, "discord", "discord_10008") {
		t.Fatal("the early edit was reported failed")
	}
	edits := 0
	for _, c := range e.fake.Calls() {
		if c == "PATCH /webhooks/"+app+"/"+tok+"/messages/@original" {
			edits++
		}
	}
	if edits < 2 {
		t.Fatalf("%d edits of the original: the race was not reproduced", edits)
	}
}

// TestTableStreamedAndSplit: Discord renders no Markdown table, so a
// model's table arrives as a code block of aligned columns, also when the
// streamed answer is split into messages inside the table: the next
// message opens the table again and its rows are columns too, not pipes.
func TestTableStreamedAndSplit(t *testing.T) {
	e := setup(t, options{model: echo.New(echo.WithDelay(time.Millisecond)), interval: 20 * time.Millisecond})
	var b strings.Builder
	b.WriteString("Stock:\n\n| Item | Qty |\n|:--|--:|\n")
	for i := range 120 {
		fmt.Fprintf(&b, "| item %03d | %d |\n", i, i*7)
	}
	b.WriteString("\nThat is all.")
	e.ask("5500000000000000005", b.String())
	msgs := e.wait("the whole table", func(m []chatfake.DiscordMessage) bool {
		return len(m) >= 2 && strings.Contains(m[len(m)-1].Content, "That is all.")
	})
	rows := 0
	for i, m := range msgs {
		if strings.Contains(m.Content, "|") {
			t.Fatalf("message %d has a table's pipes:\n%s", i, m.Content)
		}
		if !strings.Contains(m.Content, "```\n") {
			t.Fatalf("message %d has no code block:\n%s", i, m.Content)
		}
		for line := range strings.Lines(m.Content) {
			if strings.HasPrefix(line, "item ") {
				rows++
				if len(strings.TrimRight(line, "\n")) != len("item 000  833") {
					t.Fatalf("a row not aligned: %q", line)
				}
			}
		}
	}
	if rows != 120 || !strings.HasPrefix(msgs[0].Content, "echo: Stock:\n\n```\nItem      Qty\n--------  ---\nitem 000    0\n") {
		t.Fatalf("%d rows; first message:\n%s", rows, msgs[0].Content)
	}
}

// TestDeletedAnswerPostedAnew: a person deleted the answer while it
// streamed (the original response, the "thinking…" message that became
// its start). The rest arrives as a follow-up with the whole answer;
// every later edit of the deleted message was refused 404 Unknown
// Message (10008), and the answer lost but for its start.
func TestDeletedAnswerPostedAnew(t *testing.T) {
	m := chatfake.NewPaused("First words.", " And the rest.")
	e := setup(t, options{model: m})
	tok := e.ask("5500000000000000005", "hello")
	msgs := e.wait("the answer's start", func(m []chatfake.DiscordMessage) bool {
		return len(m) == 1 && m[0].Content == "First words."
	})
	e.fake.Delete(msgs[0].ID)
	m.Resume()
	e.wait("the answer's end", func(m []chatfake.DiscordMessage) bool {
		return len(m) > 0 && strings.Contains(m[len(m)-1].Content, "rest")
	})
	e.Stop(t) // the reply is done
	msgs = e.fake.Messages()
	if len(msgs) != 1 || msgs[0].Content != "First words. And the rest." || msgs[0].Token != tok || msgs[0].Ephemeral {
		t.Fatalf("messages %+v; calls %v", msgs, e.fake.Calls())
	}
}
