// Package telegram is the Telegram channel: a channel.Driver that answers
// Telegram messages through an agent, over the Bot API's webhook.
//
//	drv, err := telegram.New(telegram.Config{Token: …, WebhookSecret: …})
//	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
//
// # Route
//
//	POST /channels/telegram/webhook  the Bot API's updates: message, callback_query
//
// Telegram sends the secret_token given to setWebhook in the
// X-Telegram-Bot-Api-Secret-Token header of every update; a request
// without it, or with another, is 401 and touches nothing (compared in
// constant time). An update is answered 200 as soon as it is queued.
//
// # Which messages are answered
//
// Every text message that reaches the bot: in a private chat all of them,
// in a group what Telegram's privacy mode lets through (commands,
// mentions, replies to the bot). A leading /ask or /start command (also
// as /ask@YourBot) is taken out of the text. Messages from bots, the bot's
// own included, edited messages and messages without text are ignored.
//
// # Conversations and sessions
//
// One chat is one session, "telegram.<chat id>"; in a forum supergroup
// each topic is its own, "telegram.<chat id>.<message_thread_id>". With a
// user-scoped agent the Telegram user 123 is the spool user
// "telegram.123", so a person's private chat is theirs alone and each
// member of a group has their own session there.
//
// # Answers
//
// The answer is sent as a reply to the question (sendMessage with
// reply_parameters, and message_thread_id in a topic) in the HTML parse
// mode (Markdown is converted, with &, < and > escaped; a table, which
// Telegram has not, becomes a <pre> block of aligned columns, or row by
// row when wider than 60 columns), then edited as it
// streams (editMessageText, at most once a second by default: Telegram
// allows about one edit a second per chat). A message takes 4096
// characters (counted in UTF-16, as Telegram counts): a longer answer goes
// on in further messages. A tool call that needs approval is a message
// with an inline keyboard (Allow, Always allow, Deny); a press by the
// person who asked (or one of Config.Approvers) resolves it, as POST
// /v1/sessions/{id}/approvals/{approval} does, and the message is edited
// to say who decided; other presses get a notice (answerCallbackQuery).
//
// # Delivery
//
// A message is deduplicated by its chat and message id, a button press by
// its callback query id, durably (see package channel, "Deliveries"):
// Telegram's redelivery of an update it did not see answered makes no
// second turn, across a restart too. Calls go through channel.Transport
// (a 429's parameters.retry_after is waited, 5xx back off) and the
// go-telegram/bot client, which takes a server URL for proxies and tests
// and has no dependencies.
package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	tg "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/spool-go/spool/server/channel"
)

// Limit is the most characters of one message, in UTF-16 code units.
const Limit = 4096

// DefaultAPIURL is the Bot API's server.
const DefaultAPIURL = "https://api.telegram.org"

// SecretHeader carries the webhook's secret token.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// Config configures the Telegram channel.
type Config struct {
	// Token is the bot's token from @BotFather (TELEGRAM_BOT_TOKEN).
	// Required.
	Token string
	// WebhookSecret is the secret_token given to setWebhook
	// (TELEGRAM_WEBHOOK_SECRET): 1-256 of A-Z a-z 0-9 _ -. Required.
	WebhookSecret string
	// APIURL is the Bot API server; default DefaultAPIURL.
	APIURL string
	// Approvers are Telegram user ids that may answer any approval.
	Approvers []string
	// EditInterval and TurnTimeout: see channel.Platform.
	EditInterval, TurnTimeout time.Duration
	// HTTPClient makes the calls to Telegram; default one whose
	// transport is a channel.Transport.
	HTTPClient *http.Client
	// Logger gets content-free lines; default slog.Default().
	Logger *slog.Logger
}

// secretChars and command are compiled on first use, not in every process
// that links the driver: {1,256} alone compiles to 256 copies of the class.
var secretChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`) })

// Driver is the Telegram channel driver and its webhook.
type Driver struct {
	cfg   Config
	relay *channel.Relay
	bot   *tg.Bot
	self  int64 // the bot's user id, the token's first part
	mux   *http.ServeMux
	// secret is the webhook secret's SHA-256: a request's header is
	// compared by digest, so the comparison takes the same time whatever
	// the header's length (subtle.ConstantTimeCompare returns at once
	// for unequal lengths, which would tell the secret's).
	secret [sha256.Size]byte
}

// New returns the Telegram driver of cfg, or an error naming a missing or
// malformed setting.
func New(cfg Config) (*Driver, error) {
	switch {
	case cfg.Token == "":
		return nil, fmt.Errorf("telegram: the bot token is missing (TELEGRAM_BOT_TOKEN)")
	case cfg.WebhookSecret == "":
		return nil, fmt.Errorf("telegram: the webhook secret is missing (TELEGRAM_WEBHOOK_SECRET)")
	case !secretChars().MatchString(cfg.WebhookSecret):
		return nil, fmt.Errorf("telegram: the webhook secret must be 1-256 of A-Z a-z 0-9 _ - (TELEGRAM_WEBHOOK_SECRET)")
	}
	id, err := strconv.ParseInt(strings.SplitN(cfg.Token, ":", 2)[0], 10, 64)
	if err != nil || !strings.Contains(cfg.Token, ":") {
		return nil, fmt.Errorf("telegram: the bot token is not of the form 123456:ABC… (TELEGRAM_BOT_TOKEN)")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram: the API URL %q is not an http(s) URL", cfg.APIURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &channel.Transport{}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger
	b, err := tg.New(cfg.Token,
		tg.WithServerURL(strings.TrimSuffix(cfg.APIURL, "/")),
		tg.WithSkipGetMe(),
		tg.WithHTTPClient(time.Minute, recorder{cfg.HTTPClient}),
		// The client's own error reports can quote response bodies:
		// counted, not logged.
		tg.WithErrorsHandler(func(error) { log.Debug("telegram client error") }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	d := &Driver{
		cfg:    cfg,
		secret: sha256.Sum256([]byte(cfg.WebhookSecret)),
		relay: channel.NewRelay(channel.Platform{
			Name:         "telegram",
			Limit:        Limit,
			Measure:      channel.UTF16Len,
			Format:       Format,
			EditInterval: cfg.EditInterval,
			TurnTimeout:  cfg.TurnTimeout,
			Approvers:    cfg.Approvers,
			Secret:       []byte(cfg.Token),
			Logger:       cfg.Logger,
		}),
		bot:  b,
		self: id,
		mux:  http.NewServeMux(),
	}
	d.mux.HandleFunc(webhookRoute, d.handleUpdate)
	return d, nil
}

// Name implements channel.Driver: "telegram".
func (d *Driver) Name() string { return d.relay.Name() }

// Listen implements channel.Driver.
func (d *Driver) Listen(ctx context.Context, disp channel.Dispatcher) error {
	return d.relay.Listen(ctx, disp)
}

// Send implements channel.Driver.
func (d *Driver) Send(ctx context.Context, t channel.Target, p channel.Payload) error {
	return d.relay.Send(ctx, t, p)
}

// Close implements channel.Driver.
func (d *Driver) Close() error { return d.relay.Close() }

// Drain stops taking messages and lets running turns finish (see
// channel.Relay.Drain).
func (d *Driver) Drain() { d.relay.Drain() }

// The webhook routes.
const (
	webhookRoute = "POST /channels/telegram/webhook"
)

// Routes returns the patterns of the webhook routes ServeHTTP serves, so
// that a server can name them in its logs, metrics and API description.
func (d *Driver) Routes() []string { return []string{webhookRoute} }

// ServeHTTP serves the webhook route.
func (d *Driver) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

func (d *Driver) handleUpdate(w http.ResponseWriter, r *http.Request) {
	got := sha256.Sum256([]byte(r.Header.Get(SecretHeader)))
	if subtle.ConstantTimeCompare(got[:], d.secret[:]) != 1 {
		channel.Unauthorized(w, "the request does not carry this bot's webhook secret ("+SecretHeader+")")
		return
	}
	body, ok := channel.ReadBody(w, r)
	if !ok {
		return
	}
	var u models.Update
	if err := json.Unmarshal(body, &u); err != nil {
		channel.WriteError(w, http.StatusBadRequest, "bad_request", "the body is not a Telegram update")
		return
	}
	var err error
	session := ""
	switch {
	case u.Message != nil:
		session, err = d.message(r.Context(), u.Message)
	case u.CallbackQuery != nil:
		session, err = d.press(u.CallbackQuery)
	}
	if !channel.Accepted(w, err) {
		d.cfg.Logger.Warn("telegram update not taken", "session", session, "error", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// conversation returns the session id of a message's chat (and topic).
func conversation(m *models.Message) (string, bool) {
	id := "telegram." + strconv.FormatInt(m.Chat.ID, 10)
	if m.IsTopicMessage && m.MessageThreadID != 0 {
		id += "." + strconv.Itoa(m.MessageThreadID)
	}
	return id, m.Chat.ID != 0
}

var command = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/(ask|start)(@[A-Za-z0-9_]+)?\b\s*`) })

// message dispatches a message for the bot, if it is one.
func (d *Driver) message(ctx context.Context, m *models.Message) (string, error) {
	if m.From == nil || m.From.IsBot || m.From.ID == d.self || m.From.ID == 0 {
		return "", nil
	}
	id, ok := conversation(m)
	text := strings.TrimSpace(command().ReplaceAllString(m.Text, ""))
	if !ok || text == "" {
		return "", nil
	}
	user := strconv.FormatInt(m.From.ID, 10)
	c := &conv{d: d, chat: m.Chat.ID, thread: threadOf(m), replyTo: m.ID}
	return id, d.relay.Receive(channel.Message{
		Conversation: id,
		User:         user,
		Realm:        "telegram",
		Text:         text,
		Delivery:     &channel.Delivery{ID: "telegram." + strconv.FormatInt(m.Chat.ID, 10) + "." + strconv.Itoa(m.ID), Time: time.Unix(int64(m.Date), 0)},
	}, c)
}

func threadOf(m *models.Message) int {
	if m.IsTopicMessage {
		return m.MessageThreadID
	}
	return 0
}

// press dispatches the decision of an approval button.
func (d *Driver) press(q *models.CallbackQuery) (string, error) {
	m := q.Message.Message
	if m == nil || q.From.IsBot || q.ID == "" {
		return "", nil
	}
	id, ok := conversation(m)
	if !ok {
		return "", nil
	}
	c := &conv{d: d, chat: m.Chat.ID, thread: threadOf(m), callback: q.ID, approval: m.ID, question: m.Text, presser: q.From}
	refusal, err := d.relay.Press(channel.Press{
		Conversation: id,
		User:         strconv.FormatInt(q.From.ID, 10),
		Realm:        "telegram",
		Value:        q.Data,
		Delivery:     &channel.Delivery{ID: "telegram.cb." + q.ID, Time: time.Unix(int64(m.Date), 0)},
	}, c)
	if refusal != "" {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.Tell(ctx, refusal)
		}()
	}
	return id, err
}
