package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Conversation is where one reply goes on a chat platform: the thread,
// chat or interaction a message came from. A driver makes one for each
// message (or button press) it receives and the Relay calls it, one call
// at a time, as the turn goes. Text is already rendered for the platform
// and within its length limit.
type Conversation interface {
	// Post posts a new message and returns its id, for Edit.
	Post(ctx context.Context, text string) (id string, err error)
	// Edit replaces the text of the message id that Post returned. When
	// the platform answers that the message no longer exists (a person
	// deleted it), the error wraps ErrMessageGone: the relay then posts
	// the text as a new message, and edits that one from then on, where
	// any other refusal would lose the rest of the answer.
	Edit(ctx context.Context, id, text string) error
	// Ask posts an approval request with the platform's buttons.
	Ask(ctx context.Context, q Question) error
	// Decided shows that a button press took effect: the approval
	// message says who decided what, and its buttons go.
	Decided(ctx context.Context, d Decided) error
	// Tell tells the person who pressed a button something only they need
	// to see, when the platform can ("already decided").
	Tell(ctx context.Context, text string) error
}

// ErrMessageGone is what a Conversation's Edit wraps when the platform
// says the message to edit does not exist any more: someone deleted it.
// Posting still works there, unlike after other refusals, so the relay
// tells it apart. A driver wraps it around its PlatformError, which keeps
// the platform's code for logs and observations.
var ErrMessageGone = errors.New("channel: the message to edit was deleted")

// Question is an approval to show as buttons. Each button carries its
// value back in the press (see Relay.Press).
type Question struct {
	Approval spool.Approval
	// Button values: allow once, allow for the rest of the session
	// ("Always allow"), deny.
	Allow, Always, Deny string
}

// Arguments returns the call's arguments as text for the approval
// message, cut to at most n bytes (between two characters, with "…").
func (q Question) Arguments(n int) string {
	args := string(q.Approval.Arguments)
	if len(args) <= n {
		return args
	}
	for n > 0 && !utf8.RuneStart(args[n]) {
		n--
	}
	return args[:n] + "…"
}

// Decided is a button press that took effect.
type Decided struct {
	By       string // the platform user who pressed
	Decision string // "allowed", "always allowed" or "denied"
}

// Verdict is the decision as the start of a sentence: "Allowed".
func (d Decided) Verdict() string {
	if d.Decision == "" {
		return ""
	}
	return strings.ToUpper(d.Decision[:1]) + d.Decision[1:]
}

// Platform describes a chat platform to its Relay.
type Platform struct {
	// Name names the channel ("slack"), in logs and observations.
	Name string
	// Limit is the longest message the platform takes, as Measure counts
	// (default runes).
	Limit   int
	Measure func(string) int
	// Format renders Markdown, the models' output, for the platform.
	Format func(markdown string) string
	// EditInterval is the least time between two edits of one streamed
	// message; default one second.
	EditInterval time.Duration
	// TurnTimeout bounds a turn started from the platform (a message's
	// Deadline, when sooner, bounds it instead); default ten minutes. A
	// turn is not bound to the webhook request that started it.
	TurnTimeout time.Duration
	// Approvers are platform user ids that may answer any approval,
	// besides the person whose message asked for the tool.
	Approvers []string
	// Secret signs the values of approval buttons (a driver passes its
	// bot token), so a press names an approval of its own conversation
	// and the person who may decide it.
	Secret []byte
	// Logger gets a content-free line for each post that failed.
	Logger *slog.Logger
}

// Relay is what every chat-platform driver shares: it dispatches the
// messages and button presses a driver received, and turns the payloads
// of each reply into platform posts. Its methods Name, Listen, Send and
// Close are a channel.Driver's; a driver adds the webhook.
//
// A reply is streamed: the answer is posted as it starts, then the post
// is edited as text arrives, at most once per EditInterval, and split
// into further posts at the platform's length limit. A post that fails
// (after Transport's retries) is reported as an ObserveMessageFailed
// observation and a log line with the channel, session and error code,
// and never fails the turn, which is already stored. Nor does a slow
// platform (rate limited, retrying) hold the turn: a reply's payloads go
// to the platform from a goroutine of their own, in order, while the turn
// runs on at the model's pace (see Relay.Send).
//
// A failure the platform may get over (a 5xx or 429 that Transport's
// retries did not see through, no answer, a timeout) is tried again at
// the next update of the answer. A refusal it will repeat, whatever the
// timing (see PlatformError.Permanent: the channel was deleted, the bot
// removed, the text refused), is not: once a post of a reply is refused
// so, the relay makes no more posts or edits of that reply's text, bar
// the one note that says it was not sent, and an edit refused so leaves
// its message as it was. An edit of a message a person deleted
// (ErrMessageGone) posts the text anew instead. So a reply to a deleted
// channel costs one refused call and one log line, not one per update.
type Relay struct {
	p Platform

	mu         sync.Mutex
	d          Dispatcher
	observe    func(context.Context, spool.Observation)
	agent      *spool.Agent
	userScoped bool
	base       context.Context
	stop       context.CancelFunc
	draining   atomic.Bool
	// closing ends closeGrace after Close, and with it every platform
	// call still going: the last words of stopped turns, and what their
	// outboxes still hold, may not hold up a shutdown for long.
	closing    context.Context
	endClosing context.CancelFunc
	closeOnce  sync.Once
	closeGrace time.Duration
}

// NewRelay returns the relay of platform p.
func NewRelay(p Platform) *Relay {
	if p.Limit <= 0 {
		p.Limit = 2000
	}
	if p.EditInterval <= 0 {
		p.EditInterval = time.Second
	}
	if p.TurnTimeout <= 0 {
		p.TurnTimeout = 10 * time.Minute
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	base, stop := context.WithCancel(context.Background())
	closing, endClosing := context.WithCancel(context.Background())
	return &Relay{p: p, base: base, stop: stop, closing: closing, endClosing: endClosing, closeGrace: 5 * time.Second}
}

// Name implements Driver.
func (r *Relay) Name() string { return r.p.Name }

// Listen implements Driver. A dispatcher that can say (AgentDispatcher
// can) tells the relay whether sessions are user-scoped and takes its
// observations.
func (r *Relay) Listen(ctx context.Context, d Dispatcher) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = d
	if a, ok := d.(interface{ Agent() *spool.Agent }); ok {
		r.agent = a.Agent()
		r.userScoped = r.agent.Scope() == spool.ScopeUser
	}
	if o, ok := d.(interface {
		Observe(context.Context, spool.Observation)
	}); ok {
		r.observe = o.Observe
	}
	return nil
}

// Close implements Driver: turns still running stop (recorded cancelled)
// and new messages are refused with ErrClosed. What replies still have to
// post gets five seconds, all of it together, then its calls fail (and
// are observed failed), so the final payloads, which wait for their
// replies' posts, return soon after Close however the platform is.
func (r *Relay) Close() error {
	r.stop()
	r.closeOnce.Do(func() { time.AfterFunc(r.closeGrace, r.endClosing) })
	return nil
}

// Drain refuses new messages with ErrClosed (a webhook answers them 503,
// so the platform delivers them again later, to this server or another)
// and lets the turns already running go on to their end; Close stops
// them. server.Server.Shutdown drains before it closes.
func (r *Relay) Drain() { r.draining.Store(true) }

// Message is a message a person sent on the platform.
type Message struct {
	// Conversation is the session id of the conversation it belongs to.
	Conversation string
	// User is the sender's platform id; Realm and User make the spool
	// user of a user-scoped agent, Realm + "." + User
	// ("slack.T123" + "." + "U456").
	User, Realm string
	Text        string
	Delivery    *Delivery
	// Deadline, when not zero, is when the reply can no longer be posted
	// (Discord's interaction token expires): the turn ends by then even
	// when TurnTimeout would let it run on, so that how it ended can
	// still be said.
	Deadline time.Time
}

// Receive dispatches m; its reply goes to conv. It returns once the
// message is queued (ErrDuplicate for a delivery seen before, ErrClosed
// after Close), so a webhook can answer at once; the turn runs on,
// bounded by TurnTimeout.
func (r *Relay) Receive(m Message, conv Conversation) error {
	return r.dispatch(Inbound{
		Target:   r.target(m.Conversation, m.Realm, m.User),
		Text:     m.Text,
		Delivery: m.Delivery,
	}, m.Deadline, &reply{conv: conv, starter: m.User})
}

// Known reports whether conversation has a session already (for a
// user-scoped agent, user's session): a driver answers messages that do
// not address the bot only in conversations it is part of. Without an
// AgentDispatcher it reports false.
func (r *Relay) Known(ctx context.Context, conversation, realm, user string) bool {
	r.mu.Lock()
	a := r.agent
	r.mu.Unlock()
	if a == nil {
		return false
	}
	if t := r.target(conversation, realm, user); t.User != "" {
		ctx = spool.ContextWithUser(ctx, t.User)
	}
	_, err := a.SessionInfo(ctx, conversation)
	return err == nil
}

// Press is a person pressing an approval button.
type Press struct {
	Conversation string // the session id of the conversation pressed in
	User, Realm  string // the presser, as in Message
	Value        string // the button's value
	Delivery     *Delivery
	Deadline     time.Time // as in Message
}

// Press dispatches the decision of a button press; what comes of it goes
// to conv (Decided, then the resumed answer; or Tell, "already
// decided"). It returns a refusal for the presser when the press cannot
// be taken: a value this relay did not sign for this conversation, or a
// presser who is neither the person whose message asked for the tool nor
// an approver. Then nothing was dispatched.
func (r *Relay) Press(p Press, conv Conversation) (refusal string, err error) {
	b, ok := r.openButton(p.Conversation, p.Value)
	if !ok {
		return "This button is not valid here.", nil
	}
	if p.User != b.starter && !slices.Contains(r.p.Approvers, p.User) {
		return "Only the person who asked, or an approver, can decide this.", nil
	}
	return "", r.dispatch(Inbound{
		Target:   r.target(p.Conversation, p.Realm, b.starter),
		Decision: &Decision{ApprovalID: b.approval, Decision: b.decision},
		Delivery: p.Delivery,
	}, p.Deadline, &reply{conv: conv, starter: b.starter, decided: &Decided{By: p.User, Decision: b.label()}})
}

func (r *Relay) target(conversation, realm, user string) Target {
	t := Target{SessionID: conversation}
	r.mu.Lock()
	scoped := r.userScoped
	r.mu.Unlock()
	if scoped {
		t.User = realm + "." + user
	}
	return t
}

// UserID returns the spool user of platform user user in realm, as a
// user-scoped agent keys sessions by, or an error naming the id when it
// is not a valid store id.
func UserID(realm, user string) (string, error) {
	u := realm + "." + user
	if err := store.ValidateNamespace(store.Namespace{Agent: "a", Owner: u}); err != nil {
		return "", fmt.Errorf("channel: user %q: %w", u, err)
	}
	return u, nil
}

func (r *Relay) dispatch(in Inbound, deadline time.Time, rp *reply) error {
	if r.base.Err() != nil || r.draining.Load() {
		return ErrClosed
	}
	r.mu.Lock()
	d := r.d
	r.mu.Unlock()
	if d == nil {
		return fmt.Errorf("channel %s: not listening (use channel.Connect or server.Options.Channels)", r.p.Name)
	}
	end := time.Now().Add(r.p.TurnTimeout)
	if !deadline.IsZero() && deadline.Before(end) {
		end = deadline
	}
	ctx, cancel := context.WithDeadline(r.base, end)
	rp.cancel, rp.target = cancel, in.Target
	in.Origin = rp
	if err := d.Dispatch(ctx, in); err != nil {
		cancel()
		return err
	}
	return nil
}

// reply is the state of one reply: the Origin of its Inbound.
type reply struct {
	conv    Conversation
	cancel  context.CancelFunc
	target  Target
	starter string
	decided *Decided // a press: shown once the resumed turn starts
	once    sync.Once
	box     *outbox // what Send hands on to the platform; made by the first Send

	text   string   // the answer so far, Markdown
	posted []posted // the parts posted so far
	last   time.Time
	stale  bool // text came that no flush has looked at yet
	// refused: the platform refused a post of this reply for good (see
	// PlatformError.Permanent); its text is not offered again. noted: the
	// note that says so was tried, which is done once.
	refused, noted bool
}

// posted is a part of the answer as the platform has it.
type posted struct {
	id, text string
	// frozen: an edit of it was refused for good; it is not edited again.
	// gone: a person deleted it; the next flush posts it anew.
	frozen, gone bool
}

// Send implements Driver. It never fails a turn, nor holds it: the
// payloads of a reply go to the platform in order from a goroutine of the
// reply's own (an outbox), however slowly the platform takes them (rate
// limits, retries), while the turn runs on; Send of the final payload
// returns once everything is delivered. What the platform refuses is
// observed and logged.
func (r *Relay) Send(ctx context.Context, t Target, p Payload) error {
	rp, ok := p.Origin.(*reply)
	if !ok {
		return fmt.Errorf("channel: %s: a payload for a message this relay did not dispatch", r.p.Name)
	}
	rp.once.Do(func() {
		rp.box = newOutbox(func(ctx context.Context, p Payload, behind bool) { r.deliver(ctx, rp, p, behind) })
	})
	if p.Final {
		rp.box.finish(ctx, p)
		return nil
	}
	rp.box.put(ctx, p)
	return nil
}

// deliver shows one payload of a reply on the platform. When the outbox
// is behind (more is queued), the text is not flushed yet: the edit that
// shows it waits for the rest, so a slow platform gets one edit for all
// that came meanwhile; approvals and the end flush whatever the queue.
// Once caught up, on whatever event, text not yet looked at is flushed:
// the next event may be long in coming (a tool running).
func (r *Relay) deliver(ctx context.Context, rp *reply, p Payload, behind bool) {
	r.show(ctx, rp, p)
	if !p.Final && !behind && rp.stale {
		r.flush(ctx, rp, false)
	}
}

// show does what p asks of the platform; text and steps only mark the
// posts stale, for deliver to flush when the outbox is not behind.
func (r *Relay) show(ctx context.Context, rp *reply, p Payload) {
	if p.Final {
		r.finish(ctx, rp, p)
		rp.cancel()
		return
	}
	switch ev := p.Event; ev.Kind {
	case spool.EventTurnStart:
		if rp.decided != nil {
			r.call(ctx, rp, "decided", func(ctx context.Context) error { return rp.conv.Decided(ctx, *rp.decided) })
		}
	case spool.EventText:
		rp.text += ev.Text
		rp.stale = true
	case spool.EventApprovalRequest:
		if !r.flush(ctx, rp, true) {
			// The turn pauses at the buttons and its end says nothing
			// of this text, which the buttons leave behind: say it now.
			r.sayNotSent(ctx, rp)
		}
		q := Question{
			Approval: *ev.Approval,
			Allow:    r.button(rp.target.SessionID, ev.Approval.ID, 'a', rp.starter),
			Always:   r.button(rp.target.SessionID, ev.Approval.ID, 's', rp.starter),
			Deny:     r.button(rp.target.SessionID, ev.Approval.ID, 'd', rp.starter),
		}
		// Asked even after a refusal: the turn waits on the buttons,
		// and the refusal may have been of the text alone.
		r.call(ctx, rp, "ask", func(ctx context.Context) error { return rp.conv.Ask(ctx, q) })
		// What the model says after this goes below the buttons.
		rp.text, rp.posted = "", nil
	case spool.EventStepEnd, spool.EventToolCall:
		rp.stale = true // a post or edit that failed for now is tried again
	}
}

// flush brings the posts up to the answer so far: edits the parts that
// changed and posts new ones. Unless force, at most once per
// EditInterval. It reports whether the posts show the answer so far
// (false when the platform refused a post or an edit, now or before).
//
// A part whose message is gone is posted anew, below the parts after it
// if there are any; in practice only the last part changes, the answer
// growing at its end.
func (r *Relay) flush(ctx context.Context, rp *reply, force bool) bool {
	if rp.refused {
		rp.stale = false
		return false
	}
	if !force && time.Since(rp.last) < r.p.EditInterval {
		return true
	}
	rp.stale = false
	parts := Split(rp.text, r.p.Limit, r.p.Measure, r.p.Format)
	if len(parts) == 0 {
		return true
	}
	rp.last = time.Now()
	shown := true
	for i, part := range parts {
		if i < len(rp.posted) {
			p := &rp.posted[i]
			switch {
			case p.text == part && !p.gone, p.id == "":
				continue
			case p.frozen:
				shown = false
				continue
			case !p.gone:
				id := p.id
				err := r.call(ctx, rp, "edit", func(ctx context.Context) error { return rp.conv.Edit(ctx, id, part) })
				switch {
				case err == nil:
					p.text = part
					continue
				case errors.Is(err, ErrMessageGone):
					p.gone = true // posted anew below
				case refusedForGood(err):
					p.frozen = true
					shown = false
					continue
				default:
					shown = false // the next flush edits it again
					continue
				}
			}
		}
		var id string
		err := r.call(ctx, rp, "post", func(ctx context.Context) (err error) {
			id, err = rp.conv.Post(ctx, part)
			return err
		})
		if err != nil {
			// The next flush posts it again, unless the platform will
			// only refuse it again.
			rp.refused = refusedForGood(err)
			return false
		}
		if i < len(rp.posted) {
			rp.posted[i] = posted{id: id, text: part}
		} else {
			rp.posted = append(rp.posted, posted{id: id, text: part})
		}
	}
	return shown
}

// finish sends what is left of a reply and says how its turn ended when
// that is not an answer.
func (r *Relay) finish(ctx context.Context, rp *reply, p Payload) {
	shown := r.flush(ctx, rp, true)
	say := func(text string) { r.say(ctx, rp, text) }
	tell := func(text string) {
		r.call(ctx, rp, "tell", func(ctx context.Context) error { return rp.conv.Tell(ctx, text) })
	}
	switch err := p.Err; {
	case err == nil:
	case errors.Is(err, spool.ErrNoApproval):
		tell("This approval was already decided.")
		return
	case errors.Is(err, store.ErrSessionExpired):
		tell("This approval expired with its session.")
		return
	case errors.Is(err, spool.ErrApprovalPending):
		say("A tool call above is waiting for approval: answer it first.")
		return
	case errors.Is(err, spool.ErrBusy):
		say("Another answer is being written in this conversation; try again in a moment.")
		return
	case errors.Is(err, ErrClosed), errors.Is(err, spool.ErrClosed), errors.Is(err, context.Canceled):
		say("The server is shutting down; this was not answered.")
		return
	default:
		r.p.Logger.Warn("channel turn failed", "channel", r.p.Name, "session", rp.target.SessionID, "code", errorCode(err))
		say("Sorry, this could not be answered right now.")
		return
	}
	res := p.Result
	if res == nil {
		return
	}
	switch res.Status {
	case transcript.StatusError:
		code := "error"
		if res.Error != nil && res.Error.Code != "" {
			code = string(res.Error.Code)
		}
		say("The answer failed (" + code + ").")
	case transcript.StatusCancelled:
		say("The answer was stopped.")
	case transcript.StatusPromptBlocked, transcript.StatusResponseBlocked:
		if res.Notice != "" {
			say(res.Notice)
		} else {
			say("This was not answered.")
		}
	case transcript.StatusOK:
		switch {
		case !shown:
			r.sayNotSent(ctx, rp)
		case len(rp.posted) == 0 && rp.decided == nil:
			say("(no answer)")
		}
		if res.Notice != "" {
			// The provider stopped the answer short.
			say("(incomplete: " + res.Notice + ")")
		}
	}
}

// say posts a note of the relay's own.
func (r *Relay) say(ctx context.Context, rp *reply, text string) {
	r.call(ctx, rp, "post", func(ctx context.Context) error {
		_, err := rp.conv.Post(ctx, r.render(text))
		return err
	})
}

// sayNotSent says that text of rp was not sent. After a refusal for good,
// only once: the reply's text is not offered again, so there is no more
// to say, and the platform will likely refuse the note too.
func (r *Relay) sayNotSent(ctx context.Context, rp *reply) {
	if rp.refused {
		if rp.noted {
			return
		}
		rp.noted = true
	}
	r.say(ctx, rp, notSent(rp))
}

// notSent is the note for text of rp the platform refused: a short note
// may still go through, and "(no answer)", or nothing, would be false.
func notSent(rp *reply) string {
	if len(rp.posted) == 0 {
		return "Sorry, the answer could not be sent here."
	}
	return "(the rest of this answer could not be sent here)"
}

func (r *Relay) render(text string) string {
	if r.p.Format != nil {
		return r.p.Format(text)
	}
	return text
}

// call runs one platform call with the reply's context (never the turn's
// cancellation: a reply still goes out when the turn was stopped), for at
// most two minutes and never past the close grace, and observes it.
func (r *Relay) call(ctx context.Context, rp *reply, op string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	// Also a call begun before Close ends with the close grace.
	defer context.AfterFunc(r.closing, cancel)()
	start := time.Now()
	err := fn(ctx)
	o := spool.Observation{
		Kind:      spool.ObserveMessageSent,
		SessionID: rp.target.SessionID,
		Duration:  time.Since(start),
		Channel:   r.p.Name,
	}
	if err != nil {
		o.Kind, o.ErrorCode = spool.ObserveMessageFailed, transcript.ErrorCode(errorCode(err))
		r.p.Logger.Warn("channel post failed", "channel", r.p.Name, "op", op, "session", rp.target.SessionID, "code", o.ErrorCode,
			"permanent", refusedForGood(err))
	}
	r.mu.Lock()
	obs := r.observe
	r.mu.Unlock()
	if obs != nil {
		obs(ctx, o)
	}
	return err
}

// PlatformError is a platform's refusal of a call, as a driver reports
// it: content-free, so it can be logged.
type PlatformError struct {
	Status int    // the HTTP status; 0 when there was none
	Code   string // the platform's error code ("channel_not_found"), when it gives one
}

// Permanent reports whether the platform will refuse the same call again
// whatever the timing, so it is not worth repeating: a 4xx other than 408
// (Request Timeout) and 429 (Too Many Requests), as when the channel was
// deleted, the bot removed or the text refused; and Slack's HTTP 200 with
// ok:false and an error code (channel_not_found, not_in_channel,
// is_archived, msg_too_long…), except the codes Slack documents as
// passing: ratelimited, rate_limited, message_limit_exceeded,
// internal_error, fatal_error, service_unavailable, request_timeout and
// team_added_to_org. A 5xx, or a 429 whose wait was too long to wait,
// may pass.
func (e *PlatformError) Permanent() bool {
	switch {
	case e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return false
	case e.Status >= 400 && e.Status < 500:
		return true
	case e.Status == http.StatusOK && e.Code != "":
		return !slackPassing[e.Code]
	}
	return false
}

// slackPassing are the error codes of Slack's Web API (answered HTTP 200,
// ok:false) that say a call failed for now, not that it is refused.
var slackPassing = map[string]bool{
	"ratelimited":            true,
	"rate_limited":           true,
	"message_limit_exceeded": true,
	"internal_error":         true,
	"fatal_error":            true,
	"service_unavailable":    true,
	"request_timeout":        true,
	"team_added_to_org":      true,
}

// refusedForGood reports whether err is a refusal the platform will
// repeat (PlatformError.Permanent, or a deleted message).
func refusedForGood(err error) bool {
	var pe *PlatformError
	if errors.As(err, &pe) {
		return pe.Permanent()
	}
	return errors.Is(err, ErrMessageGone)
}

func (e *PlatformError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("platform refused the call: %s (HTTP %d)", e.Code, e.Status)
	}
	return fmt.Sprintf("platform refused the call: HTTP %d", e.Status)
}

// errorCode names what went wrong, without content: a platform's error
// code, an HTTP status, "unreachable" or "timeout".
func errorCode(err error) string {
	var pe *PlatformError
	var ue *url.Error
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		if pe.Code != "" {
			return pe.Code
		}
		return fmt.Sprintf("http_%d", pe.Status)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ue), errors.As(err, &ne):
		return "unreachable"
	}
	return "error"
}
