// Package discord is the Discord channel: a channel.Driver that answers
// Discord's /ask command through an agent, over the interactions
// endpoint.
//
//	drv, err := discord.New(discord.Config{PublicKey: …, ApplicationID: …, BotToken: …})
//	h := server.New(agent, server.Options{Channels: []channel.Driver{drv}})
//
// # Route
//
//	POST /channels/discord/interactions  PING, the /ask command, the approval buttons
//
// Every request is checked with the application's public key first:
// X-Signature-Ed25519 over X-Signature-Timestamp + body (discordgo's
// VerifyInteraction); a bad signature, or a timestamp more than five
// minutes off (a replay), is 401 and touches nothing. PING is answered
// PONG.
//
// # Conversations and sessions
//
// Messages reach a bot without the Gateway only as interactions, so the
// bot answers the slash command /ask prompt:… (RegisterCommands creates
// it). One channel is one session, "discord.<channel id>"; a thread is a
// channel of its own, so a thread is its own session. With a user-scoped
// agent the Discord user 80351110224678912 is the spool user
// "discord.80351110224678912": each person has their own session in a
// channel, and their direct messages are theirs alone.
//
// # Answers
//
// The command is answered at once with a deferred response ("thinking…",
// well within Discord's 3 seconds); the answer then replaces it (PATCH of
// the original response) and is edited as it streams, at most once a
// second by default. Discord makes the deferred message only once it has
// read the response, so the first edit of a quick answer can be refused
// 404 Unknown Message (10008): within five seconds of the interaction
// (and before the turn's deadline) that edit is tried again, after 100ms,
// 200ms, … up to a second between tries; later, 10008 means a person
// deleted the "thinking…" message, and the post fails like any other.
// The interaction's token posts for 15 minutes after
// Discord made the interaction: a turn still running 30 seconds before
// then is stopped ("The answer was stopped."), even when TurnTimeout
// (spool serve --channel-turn-timeout) is longer, so that its end is
// still shown. A message takes 2000 characters: a longer answer
// goes on in follow-up messages. Markdown is Discord's own and is sent as
// is, but for tables, which Discord does not render: each becomes a code
// block of aligned columns, or, wider than 60 columns, a block of
// "**header:** value" lines per row (Format). Mentions are disabled
// (allowed_mentions), so an answer cannot ping @everyone. A tool call that needs approval is a follow-up with Allow,
// Always allow and Deny buttons; a press by the person who asked (or one
// of Config.Approvers) resolves it, as POST
// /v1/sessions/{id}/approvals/{approval} does, the buttons' message says
// who decided, and the answer goes on in follow-ups of the press; anyone
// else, and a second press, gets an ephemeral message.
//
// # Delivery
//
// An interaction is deduplicated by its id, durably (see package channel,
// "Deliveries"). Calls go through channel.Transport (429 waits for
// Retry-After or retry_after, 5xx back off). Discord never delivers an
// interaction again, so one not taken (the server shutting down, its
// delivery not recorded) is answered with a private note to ask again,
// not the 503 or 500 the other platforms retry.
//
// # Why not discordgo's REST client
//
// discordgo's types (Interaction, InteractionResponse, the components) and
// its Ed25519 check are used as they are. Its REST calls are not: their
// endpoints are package-level variables, so pointing one driver at a
// proxy or a test server would move every discordgo user in the process,
// and its Session is built around the Gateway. The three webhook calls an
// interaction needs are plain net/http.
package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/internal/markdown"
)

// Limit is the most characters of one message.
const Limit = 2000

// DefaultAPIURL is Discord's HTTP API.
const DefaultAPIURL = "https://discord.com/api/v10"

// Command is the slash command the bot answers, and its option.
const (
	Command       = "ask"
	CommandOption = "prompt"
)

// Config configures the Discord channel.
type Config struct {
	// PublicKey verifies interactions: the application's public key, in
	// hex (General Information; DISCORD_PUBLIC_KEY). Required.
	PublicKey string
	// ApplicationID is the application's id (DISCORD_APPLICATION_ID).
	// Required.
	ApplicationID string
	// BotToken authenticates RegisterCommands (DISCORD_BOT_TOKEN).
	// Required: it also signs the approval buttons.
	BotToken string
	// APIURL is the HTTP API's base URL; default DefaultAPIURL.
	APIURL string
	// Approvers are Discord user ids that may answer any approval.
	Approvers []string
	// EditInterval and TurnTimeout: see channel.Platform. Discord's
	// interaction tokens last 15 minutes from the interaction, so a turn
	// ends 30 seconds before its token does, whatever TurnTimeout says,
	// to post how it ended.
	EditInterval, TurnTimeout time.Duration
	// HTTPClient makes the calls to Discord; default one whose transport
	// is a channel.Transport.
	HTTPClient *http.Client
	// Logger gets content-free lines; default slog.Default().
	Logger *slog.Logger
}

// Driver is the Discord channel driver and its webhook.
type Driver struct {
	cfg   Config
	key   ed25519.PublicKey
	relay *channel.Relay
	mux   *http.ServeMux
}

// snowflake is compiled on first use, not in every process that links the
// driver.
var snowflake = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,20}$`) })

// New returns the Discord driver of cfg, or an error naming a missing or
// malformed setting.
func New(cfg Config) (*Driver, error) {
	switch {
	case cfg.PublicKey == "":
		return nil, fmt.Errorf("discord: the public key is missing (DISCORD_PUBLIC_KEY)")
	case cfg.ApplicationID == "":
		return nil, fmt.Errorf("discord: the application id is missing (DISCORD_APPLICATION_ID)")
	case cfg.BotToken == "":
		return nil, fmt.Errorf("discord: the bot token is missing (DISCORD_BOT_TOKEN)")
	case !snowflake().MatchString(cfg.ApplicationID):
		return nil, fmt.Errorf("discord: the application id is not a Discord id (DISCORD_APPLICATION_ID)")
	}
	key, err := hex.DecodeString(cfg.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("discord: the public key is not 64 hex digits (DISCORD_PUBLIC_KEY)")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("discord: the API URL %q is not an http(s) URL", cfg.APIURL)
	}
	cfg.APIURL = strings.TrimSuffix(cfg.APIURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &channel.Transport{}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Driver{
		cfg: cfg,
		key: ed25519.PublicKey(key),
		relay: channel.NewRelay(channel.Platform{
			Name:         "discord",
			Limit:        Limit,
			Format:       Format,
			EditInterval: cfg.EditInterval,
			TurnTimeout:  cfg.TurnTimeout,
			Approvers:    cfg.Approvers,
			Secret:       []byte(cfg.BotToken),
			Logger:       cfg.Logger,
		}),
		mux: http.NewServeMux(),
	}
	d.mux.HandleFunc(interactionsRoute, d.handleInteraction)
	return d, nil
}

// Format renders a model's Markdown for Discord: as it is, but for its
// tables (see the package documentation, "Answers").
func Format(md string) string { return markdown.Tables(md) }

// Name implements channel.Driver: "discord".
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
	interactionsRoute = "POST /channels/discord/interactions"
)

// Routes returns the patterns of the webhook routes ServeHTTP serves, so
// that a server can name them in its logs, metrics and API description.
func (d *Driver) Routes() []string { return []string{interactionsRoute} }

// ServeHTTP serves the webhook route.
func (d *Driver) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// maxSkew is how far a signature's timestamp may be from now.
const maxSkew = 5 * time.Minute

// verified returns the body of a request signed with the application's
// key, and the time Discord signed it at.
func (d *Driver) verified(w http.ResponseWriter, r *http.Request) ([]byte, time.Time, bool) {
	body, ok := channel.ReadBody(w, r)
	if !ok {
		return nil, time.Time{}, false
	}
	r.Body = http.NoBody
	ts, err := strconv.ParseInt(r.Header.Get("X-Signature-Timestamp"), 10, 64)
	fresh := err == nil && time.Since(time.Unix(ts, 0)).Abs() <= maxSkew
	if fresh {
		vr := r.Clone(r.Context())
		vr.Body = readCloser{bytes.NewReader(body)}
		fresh = discordgo.VerifyInteraction(vr, d.key)
	}
	if !fresh {
		channel.Unauthorized(w, "the request is not signed with this application's key, or its timestamp is more than five minutes off")
		return nil, time.Time{}, false
	}
	return body, time.Unix(ts, 0), true
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func respond(w http.ResponseWriter, res discordgo.InteractionResponse) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

func ephemeral(text string) discordgo.InteractionResponse {
	return discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral},
	}
}

func (d *Driver) handleInteraction(w http.ResponseWriter, r *http.Request) {
	body, signed, ok := d.verified(w, r)
	if !ok {
		return
	}
	var in discordgo.Interaction
	if err := json.Unmarshal(body, &in); err != nil {
		channel.WriteError(w, http.StatusBadRequest, "bad_request", "the body is not a Discord interaction")
		return
	}
	if in.Type == discordgo.InteractionPing {
		respond(w, discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		return
	}
	user := in.User
	if in.Member != nil && in.Member.User != nil {
		user = in.Member.User
	}
	switch {
	case user == nil || !snowflake().MatchString(user.ID) || !snowflake().MatchString(in.ChannelID) || !snowflake().MatchString(in.ID) || in.Token == "":
		channel.WriteError(w, http.StatusBadRequest, "bad_request", "the interaction has no user, channel, id or token")
		return
	case user.Bot:
		respond(w, ephemeral("This bot does not answer bots."))
		return
	}
	conversation := "discord." + in.ChannelID
	delivery := &channel.Delivery{ID: "discord." + in.ID, Time: snowflakeTime(in.ID)}
	deadline := tokenDeadline(in.ID, signed)
	c := &conv{d: d, token: in.Token, taken: time.Now(), deadline: deadline}
	switch in.Type {
	case discordgo.InteractionApplicationCommand:
		data, ok := in.Data.(discordgo.ApplicationCommandInteractionData)
		prompt := ""
		if ok {
			for _, o := range data.Options {
				if o.Name == CommandOption && o.Type == discordgo.ApplicationCommandOptionString {
					prompt, _ = o.Value.(string)
				}
			}
		}
		if !ok || data.Name != Command || strings.TrimSpace(prompt) == "" {
			respond(w, ephemeral("Use /"+Command+" with a "+CommandOption+"."))
			return
		}
		err := d.relay.Receive(channel.Message{
			Conversation: conversation, User: user.ID, Realm: "discord", Text: strings.TrimSpace(prompt), Delivery: delivery, Deadline: deadline,
		}, c)
		if !d.taken(w, conversation, err) {
			return
		}
		respond(w, discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	case discordgo.InteractionMessageComponent:
		data, ok := in.Data.(discordgo.MessageComponentInteractionData)
		if !ok || in.Message == nil {
			respond(w, ephemeral("This button is not valid here."))
			return
		}
		c.pressed, c.question = true, in.Message.Content
		refusal, err := d.relay.Press(channel.Press{
			Conversation: conversation, User: user.ID, Realm: "discord", Value: data.CustomID, Delivery: delivery, Deadline: deadline,
		}, c)
		switch {
		case !d.taken(w, conversation, err):
		case refusal != "":
			respond(w, ephemeral(refusal))
		default:
			respond(w, discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
		}
	default:
		respond(w, ephemeral("This bot answers /"+Command+"."))
	}
}

// taken reports whether the relay took an interaction (or dropped it as
// a duplicate), and otherwise answers it. Discord never delivers an
// interaction again, so the 503 or 500 that Slack and Telegram retry
// (channel.Accepted) would only show "This interaction failed": the
// person is told, privately, to ask again.
func (d *Driver) taken(w http.ResponseWriter, conversation string, err error) bool {
	if err == nil || errors.Is(err, channel.ErrDuplicate) {
		return true
	}
	d.cfg.Logger.Warn("discord interaction not taken", "session", conversation, "error", err)
	if errors.Is(err, channel.ErrClosed) {
		respond(w, ephemeral("The bot is restarting. Ask again in a moment."))
	} else {
		respond(w, ephemeral("Your message could not be taken. Ask again."))
	}
	return false
}

// tokenLife is how long an interaction's token posts and edits its
// messages, from when Discord made the interaction; tokenSpare is what a
// turn leaves of it to say how it ended (one call, which may wait out a
// 429).
const (
	tokenLife  = 15 * time.Minute
	tokenSpare = 30 * time.Second
)

// tokenDeadline is when a turn answering interaction id, delivered signed
// at signed, must end. The interaction's age is counted on Discord's
// clock alone (its id's time to its signature's), and added to this
// server's now, so a skewed clock here does not shorten or lengthen it.
func tokenDeadline(id string, signed time.Time) time.Time {
	age := max(0, signed.Sub(snowflakeTime(id)))
	if age >= tokenLife-tokenSpare {
		// Discord delivers an interaction as it makes it: an id this old
		// is no interaction's (nor a zero one, which is no snowflake),
		// and TurnTimeout alone bounds its turn.
		return time.Time{}
	}
	return time.Now().Add(tokenLife - tokenSpare - age)
}

// snowflakeTime is when a Discord id was made.
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + 1420070400000)
}

// RegisterCommands creates (or replaces) the application's global /ask
// command with its prompt option, with the bot token: run once at setup.
func (d *Driver) RegisterCommands(ctx context.Context) error {
	cmds := []discordgo.ApplicationCommand{{
		Name:        Command,
		Description: "Ask the agent",
		Options: []*discordgo.ApplicationCommandOption{{
			Type: discordgo.ApplicationCommandOptionString, Name: CommandOption, Description: "what to ask", Required: true,
		}},
	}}
	_, err := d.call(ctx, http.MethodPut, "/applications/"+d.cfg.ApplicationID+"/commands", "Bot "+d.cfg.BotToken, cmds)
	return err
}

// call makes one API call and decodes the message it returns, if any.
func (d *Driver) call(ctx context.Context, method, path, auth string, body any) (*discordgo.Message, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, d.cfg.APIURL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "DiscordBot (https://github.com/spool-go/spool, 1)")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := d.cfg.HTTPClient.Do(req)
	if err != nil {
		// The URL holds the interaction's token: keep only the cause.
		if ue, ok := err.(*url.Error); ok {
			return nil, &url.Error{Op: ue.Op, URL: d.cfg.APIURL, Err: ue.Err}
		}
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		var e struct {
			Code int `json:"code"`
		}
		json.NewDecoder(res.Body).Decode(&e)
		pe := &channel.PlatformError{Status: res.StatusCode}
		if e.Code != 0 {
			pe.Code = "discord_" + strconv.Itoa(e.Code)
		}
		return nil, pe
	}
	var m discordgo.Message
	if res.StatusCode != http.StatusNoContent {
		json.NewDecoder(res.Body).Decode(&m)
	}
	return &m, nil
}
