// Package slack is the Slack channel: a channel.Driver that answers Slack
// messages through an agent, over the Events API and Block Kit.
//
//	drv, err := slack.New(slack.Config{SigningSecret: …, BotToken: …})
//	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
//
// # Routes
//
//	POST /channels/slack/events        the Events API: url_verification, app_mention, message
//	POST /channels/slack/interactions  interactivity: the approval buttons (block_actions)
//
// Every request is checked against the app's signing secret first
// (X-Slack-Signature, v0 HMAC-SHA256 over "v0:timestamp:body", with
// slack-go's SecretsVerifier); a bad signature, or a timestamp more than
// five minutes off, is 401 and touches nothing. Events are answered 200 as
// soon as they are queued; the turn goes on after.
//
// # Which messages are answered
//
// A mention of the bot (app_mention) anywhere; any message in a direct
// message with the bot (message.im); and, in channels, a message in a
// thread the bot already answers in (message.channels, message.groups).
// A message that shares a file is answered by its text (the file is not
// read), and a thread reply also sent to the channel as a reply. Messages
// of bots, the bot's own included, and edits, deletions and other
// subtypes are ignored. The bot's mention is taken out of the text;
// mentions of other people stay, in Slack's form (<@U789>).
//
// # Conversations and sessions
//
// One Slack thread is one session, with the id
// "slack.<team>.<channel>.<thread ts>": the thread's root message's ts,
// which for a message that is not in a thread is its own ts (the answer
// starts a thread under it). With a user-scoped agent, the Slack user
// U456 of workspace T123 is the spool user "slack.T123.U456": each person
// in a thread has their own session there, and a person's direct
// messages are theirs alone.
//
// # Answers
//
// The answer is posted into the thread (chat.postMessage with thread_ts)
// as a Block Kit section in mrkdwn (Markdown is converted: bold, italics,
// strike, code, links, quotes, lists; a table, which mrkdwn has not,
// becomes a code block of aligned columns, or row by row when wider
// than 60 columns), then edited as it streams
// (chat.update, at most once a second by default). A section takes 3000
// characters: a longer answer goes on in further messages. A tool call
// that needs approval posts Allow, Always allow and Deny buttons; a press
// by the person who asked (or one of Config.Approvers) resolves the
// approval, as POST /v1/sessions/{id}/approvals/{approval} does, and the
// answer goes on below; anyone else, and a second press, gets an
// ephemeral message (chat.postEphemeral).
//
// # Delivery
//
// A message is deduplicated by its channel and ts, durably (see package
// channel, "Deliveries"): Slack's retries (X-Slack-Retry-Num) of an event,
// and the app_mention and message events of one message, make one turn,
// also across a restart. Calls to Slack go through channel.Transport:
// 429 waits for Retry-After, 5xx backs off; slack-go's own retry option
// is left off so that all three platforms follow one set of rules.
package slack

import (
	"context"
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

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/spool-go/spool/server/channel"
)

// Limit is the most characters of one message: a section block's text.
const Limit = 3000

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api/"

// Config configures the Slack channel.
type Config struct {
	// SigningSecret verifies requests (the app's Basic Information page;
	// SLACK_SIGNING_SECRET for spool serve). Required.
	SigningSecret string
	// BotToken authenticates calls to Slack (xoxb-…, OAuth & Permissions;
	// SLACK_BOT_TOKEN). Required.
	BotToken string
	// APIURL is the Web API's base URL; default DefaultAPIURL.
	APIURL string
	// BotUserID is the bot's own user id, whose messages are ignored;
	// default: the one Slack names in each event's authorizations.
	BotUserID string
	// Approvers are Slack user ids that may answer any approval.
	Approvers []string
	// EditInterval and TurnTimeout: see channel.Platform.
	EditInterval, TurnTimeout time.Duration
	// HTTPClient makes the calls to Slack; default one whose transport
	// is a channel.Transport.
	HTTPClient *http.Client
	// Logger gets content-free lines; default slog.Default().
	Logger *slog.Logger
}

// Driver is the Slack channel driver and its webhook (an http.Handler
// for the routes above).
type Driver struct {
	cfg   Config
	relay *channel.Relay
	api   *slackapi.Client
	mux   *http.ServeMux
}

// New returns the Slack driver of cfg, or an error naming a missing
// setting.
func New(cfg Config) (*Driver, error) {
	switch {
	case cfg.SigningSecret == "":
		return nil, fmt.Errorf("slack: the signing secret is missing (SLACK_SIGNING_SECRET)")
	case cfg.BotToken == "":
		return nil, fmt.Errorf("slack: the bot token is missing (SLACK_BOT_TOKEN)")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("slack: the API URL %q is not an http(s) URL", cfg.APIURL)
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &channel.Transport{}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Driver{
		cfg: cfg,
		relay: channel.NewRelay(channel.Platform{
			Name:         "slack",
			Limit:        Limit,
			Format:       Format,
			EditInterval: cfg.EditInterval,
			TurnTimeout:  cfg.TurnTimeout,
			Approvers:    cfg.Approvers,
			Secret:       []byte(cfg.BotToken),
			Logger:       cfg.Logger,
		}),
		api: slackapi.New(cfg.BotToken, slackapi.OptionAPIURL(cfg.APIURL), slackapi.OptionHTTPClient(cfg.HTTPClient)),
		mux: http.NewServeMux(),
	}
	d.mux.HandleFunc(eventsRoute, d.handleEvents)
	d.mux.HandleFunc(interactionsRoute, d.handleInteractions)
	return d, nil
}

// Name implements channel.Driver: "slack".
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
	eventsRoute       = "POST /channels/slack/events"
	interactionsRoute = "POST /channels/slack/interactions"
)

// Routes returns the patterns of the webhook routes ServeHTTP serves, so
// that a server can name them in its logs, metrics and API description.
func (d *Driver) Routes() []string { return []string{eventsRoute, interactionsRoute} }

// ServeHTTP serves the webhook routes.
func (d *Driver) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// verified reads the body and checks its signature.
func (d *Driver) verified(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, ok := channel.ReadBody(w, r)
	if !ok {
		return nil, false
	}
	sv, err := slackapi.NewSecretsVerifier(r.Header, d.cfg.SigningSecret)
	if err == nil {
		sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		channel.Unauthorized(w, "the request is not signed by Slack with this app's signing secret, or its timestamp is more than five minutes off")
		return nil, false
	}
	return body, true
}

func (d *Driver) handleEvents(w http.ResponseWriter, r *http.Request) {
	body, ok := d.verified(w, r)
	if !ok {
		return
	}
	var env struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		channel.WriteError(w, http.StatusBadRequest, "bad_request", "the body is not a JSON event envelope")
		return
	}
	switch env.Type {
	case slackevents.URLVerification:
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(env.Challenge))
		return
	case slackevents.CallbackEvent:
	default:
		w.WriteHeader(http.StatusOK)
		return
	}
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if err != nil || !ok {
		// An event type slack-go does not know, or one we did not
		// subscribe to: nothing to answer.
		w.WriteHeader(http.StatusOK)
		return
	}
	m, ok := d.message(r.Context(), cb, ev.InnerEvent.Data)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	conv := &conv{d: d, channel: m.channel, thread: m.thread}
	err = d.relay.Receive(m.Message, conv)
	if !channel.Accepted(w, err) {
		d.cfg.Logger.Warn("slack event not taken", "session", m.Conversation, "error", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// incoming is a Slack message to answer.
type incoming struct {
	channel.Message
	channel, thread string
}

// mention and idChars are compiled on first use, not in every process that
// links the driver.
var mention = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<@[A-Z0-9]+(\|[^>]*)?>`) })

// message returns the message an event asks the bot to answer, if any.
func (d *Driver) message(ctx context.Context, cb *slackevents.EventsAPICallbackEvent, inner any) (incoming, bool) {
	var user, text, ch, ts, thread, botID, subtype string
	mentioned, direct := false, false
	switch e := inner.(type) {
	case *slackevents.AppMentionEvent:
		user, text, ch, ts, thread, botID = e.User, e.Text, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.BotID
		if e.Edited != nil {
			subtype = "edited"
		}
		mentioned = true
	case *slackevents.MessageEvent:
		user, text, ch, ts, thread, botID, subtype = e.User, e.Text, e.Channel, e.TimeStamp, e.ThreadTimeStamp, e.BotID, e.SubType
		direct = e.ChannelType == "im"
	default:
		return incoming{}, false
	}
	self := d.cfg.BotUserID
	if self == "" {
		for _, a := range cb.Authorizations {
			if a.IsBot {
				self = a.UserID
			}
		}
	}
	if user == "" || botID != "" || !personal(subtype) || user == self || ch == "" || ts == "" {
		return incoming{}, false
	}
	if thread == "" {
		thread = ts
	}
	realm := "slack." + cb.TeamID
	conversation := realm + "." + ch + "." + thread
	if !validID(conversation) || !validID(realm+"."+user) {
		d.cfg.Logger.Warn("slack event with ids no session can have; ignored")
		return incoming{}, false
	}
	text = strings.TrimSpace(stripMention(text, self))
	if text == "" {
		return incoming{}, false
	}
	if !mentioned && !direct && (thread == ts || !d.relay.Known(ctx, conversation, realm, user)) {
		return incoming{}, false
	}
	return incoming{
		Message: channel.Message{
			Conversation: conversation,
			User:         user,
			Realm:        realm,
			Text:         unescape(text),
			Delivery:     &channel.Delivery{ID: "slack." + cb.TeamID + "." + ch + "." + ts, Time: tsTime(ts)},
		},
		channel: ch,
		thread:  thread,
	}, true
}

// personal reports whether a message event of the subtype is a person's
// message: a plain one, one that shares a file (its text is the question;
// the file is not read), or a thread reply also sent to the channel.
// Edits, deletions, joins and bots' messages are not.
func personal(subtype string) bool {
	return subtype == "" || subtype == "file_share" || subtype == "thread_broadcast"
}

// stripMention takes the mentions of the bot self (<@UBOT>, or
// <@UBOT|name>) out of text. Other people's mentions are part of the
// message ("what did <@U789> say?") and stay; when the bot's id is not
// known, every mention goes, as the bot's may be any of them.
func stripMention(text, self string) string {
	return mention().ReplaceAllStringFunc(text, func(m string) string {
		id, _, _ := strings.Cut(strings.TrimSuffix(m[len("<@"):], ">"), "|")
		if self != "" && id != self {
			return m
		}
		return ""
	})
}

// unescape undoes Slack's escaping of &, < and > in message text.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

var idChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._@-]{1,128}$`) })

func validID(s string) bool { return idChars().MatchString(s) }

// tsTime reads a Slack ts ("1700000000.000100").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000)
}

func (d *Driver) handleInteractions(w http.ResponseWriter, r *http.Request) {
	body, ok := d.verified(w, r)
	if !ok {
		return
	}
	form, err := url.ParseQuery(string(body))
	var cb slackapi.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		channel.WriteError(w, http.StatusBadRequest, "bad_request", `the body is not a form with an interaction "payload"`)
		return
	}
	if cb.Type != slackapi.InteractionTypeBlockActions {
		w.WriteHeader(http.StatusOK)
		return
	}
	var act *slackapi.BlockAction
	for _, a := range cb.ActionCallback.BlockActions {
		if strings.HasPrefix(a.ActionID, actionPrefix) {
			act = a
			break
		}
	}
	ch := cb.Channel.ID
	if ch == "" {
		ch = cb.Container.ChannelID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	realm := "slack." + cb.Team.ID
	conversation := realm + "." + ch + "." + thread
	if act == nil || thread == "" || cb.User.ID == "" || !validID(conversation) {
		w.WriteHeader(http.StatusOK)
		return
	}
	c := &conv{d: d, channel: ch, thread: thread, user: cb.User.ID, approval: cb.Container.MessageTs, question: questionText(cb.Message)}
	stamp := act.ActionTs
	if stamp == "" {
		stamp = cb.ActionTs
	}
	refusal, err := d.relay.Press(channel.Press{
		Conversation: conversation,
		User:         cb.User.ID,
		Realm:        realm,
		Value:        act.Value,
		Delivery:     &channel.Delivery{ID: "slack.action." + cb.Team.ID + "." + cb.User.ID + "." + stamp, Time: tsTime(stamp)},
	}, c)
	if !channel.Accepted(w, err) {
		d.cfg.Logger.Warn("slack interaction not taken", "session", conversation, "error", err)
		return
	}
	if refusal != "" {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.Tell(ctx, refusal)
		}()
	}
	w.WriteHeader(http.StatusOK)
}

// questionText is the text of an approval message's first section, to
// keep when the buttons are replaced by the decision.
func questionText(m slackapi.Message) string {
	for _, b := range m.Blocks.BlockSet {
		if s, ok := b.(*slackapi.SectionBlock); ok && s.Text != nil {
			return s.Text.Text
		}
	}
	return ""
}
