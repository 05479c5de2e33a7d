// Package channel connects an agent to the places its messages come from.
//
// A channel driver (Driver) receives messages from somewhere (an HTTP
// route, a chat platform, a test) and hands each one to a Dispatcher,
// which runs it through the agent's normal request path and sends the
// reply back through the same driver, to the session the message came
// from. The HTTP channel of package server is one driver; package
// channel/mock is an in-process one for deterministic tests of agents;
// packages channel/slack, channel/telegram and channel/discord are the
// chat platforms, built on Relay (streamed, split, rate-bounded posts and
// approval buttons), Transport (the platforms' 429 and 5xx rules) and the
// dispatcher's durable deduplication.
//
// Guarantees:
//
//   - Messages of one session are answered one at a time, in the order the
//     driver dispatched them (Dispatch order is arrival order), and every
//     dispatched message gets exactly one final Payload, however its turn
//     ends.
//   - Replies flow with backpressure: a driver's Send returns once the
//     payload is handed on, and the next event of the turn is produced only
//     then. (Relay, under the chat platforms, hands each payload on to a
//     queue of the reply's, so a slow platform never holds a turn.) A Send that fails (the listener went away, the channel closed)
//     stops the turn, which the runtime records as cancelled.
//   - Closing a driver rejects the requests it holds with ErrClosed.
//
// # Approvals
//
// An Inbound with a Decision resolves a pending approval through
// spool.Session.Resolve, the path of POST
// /v1/sessions/{id}/approvals/{approvalId}, queued behind the session's
// other messages; its reply is the resumed turn. Chat platforms show
// approvals as buttons whose values a Relay signs (see Relay.Press).
//
// # Deliveries
//
// Platforms deliver at least once: a webhook that did not answer in time,
// or a server that restarted, gets the event again. An Inbound with a
// Delivery is recorded before it is queued, durably, in the agent's own
// store: an entry of type channel.delivery, {"delivery": id}, in a
// session of the agent LedgerAgent ("spool.deliveries") owned by the
// agent's name, one session per hour of the event's own time and shard
// of its id, so a retry finds its original however late it comes. The
// append is conditional on the bucket's last entry, so two servers
// sharing a store never both take a delivery. Buckets idle for two days
// are deleted (a store with retention of its own, such as the file
// store's newest 50 sessions, may drop them sooner; the platforms retry
// within minutes). The record comes first, so a crash between it and the
// turn's first entry loses that message rather than answering it twice:
// at most once. A store that cannot record fails the Dispatch, and the
// webhook answers 500 so that the platform retries.
//
// # Turns started from a platform
//
// A Relay gives each turn its own context, bounded by
// Platform.TurnTimeout (or by the message's Deadline when it comes
// sooner: Discord's interaction token expires) and cancelled by Close,
// never the webhook request's: the webhook is answered at once and the
// turn runs to its end.
package channel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/spool-go/spool"
)

// Errors of channels.
var (
	// ErrClosed: the channel was closed; its pending requests are rejected
	// with it and new ones refused.
	ErrClosed = errors.New("channel: closed; pending requests were rejected")
	// ErrGone: the request a reply was for is no longer waiting (its
	// client disconnected).
	ErrGone = errors.New("channel: the request is no longer waiting for its reply")
	// ErrNoPending: Send to a target with no request waiting.
	ErrNoPending = errors.New("channel: no request is waiting on this session")
	// ErrDuplicate: Dispatch of a delivery already dispatched (a
	// platform's retry); nothing was queued.
	ErrDuplicate = errors.New("channel: this delivery was already dispatched")
)

// Target names where a reply goes: a session and, for a user-scoped agent,
// the user who owns it (two users' sessions may share an id).
type Target struct {
	SessionID string
	User      string
}

func (t Target) String() string {
	if t.User == "" {
		return t.SessionID
	}
	return t.User + "/" + t.SessionID
}

// Inbound is a message that arrived on a channel.
type Inbound struct {
	Target
	Text string
	// Decision, when not nil, answers a pending approval of the session
	// instead of sending Text: the paused turn resumes, exactly as through
	// POST /v1/sessions/{id}/approvals/{approvalId}. The reply is the
	// resumed turn's; a decision for an approval no longer pending ends
	// with a final payload whose Err is spool.ErrNoApproval.
	Decision *Decision
	// Delivery, when not nil, names the platform's delivery of this
	// message, so that a platform's retry of it is dropped (ErrDuplicate)
	// instead of starting a second turn, also after a restart (see
	// AgentDispatcher).
	Delivery *Delivery
	// Origin is the driver's own note of where the message came from (a
	// thread, a chat, an interaction to answer): the dispatcher hands it
	// back on every payload of the reply, so the driver can post the
	// answer where the question was asked. The dispatcher never looks
	// inside it.
	Origin any
}

// Decision answers the pending approval ApprovalID.
type Decision struct {
	ApprovalID string
	spool.Decision
}

// Delivery identifies one delivery of a platform, for deduplication.
type Delivery struct {
	// ID is the platform's id of the event (a Slack event or message, a
	// Telegram update, a Discord interaction), the same on every retry
	// of it and different for every other event: 1 to 200 bytes of
	// printable ASCII.
	ID string
	// Time is when the platform says the event happened, the same on
	// every retry (an event's own timestamp, not its arrival).
	Time time.Time
}

// Payload is one piece of the reply to an Inbound message. A reply is
// zero or more payloads carrying events of the turn, as they happen, then
// one Final payload.
type Payload struct {
	// Event is one event of the turn; nil on the final payload.
	Event *spool.Event
	// Final marks the last payload of a reply. Result says how the turn
	// ended (or that it paused on approvals) when it ran; Err says why it
	// did not run or could not be recorded.
	Final  bool
	Result *spool.Result
	Err    error
	// Origin is the Inbound's Origin, on every payload of its reply.
	Origin any
}

// Dispatcher runs inbound messages through an agent.
type Dispatcher interface {
	// Dispatch queues in behind the messages of its session dispatched
	// before it, and returns. The reply goes out through the driver's Send
	// to in.Target. ctx bounds the turn: when it is cancelled the turn
	// stops (recorded cancelled), or never starts. A delivery dispatched
	// before is refused with ErrDuplicate.
	Dispatch(ctx context.Context, in Inbound) error
}

// Driver is a channel: where messages come from and replies go.
type Driver interface {
	// Name names the channel, for logs.
	Name() string
	// Listen starts delivering inbound messages to d. It returns once the
	// channel is ready; delivery goes on until Close.
	Listen(ctx context.Context, d Dispatcher) error
	// Send delivers one payload of a reply to the request waiting on
	// target. It returns once the payload is handed on, or an error when
	// it cannot be (ErrGone, ErrClosed, the context's error).
	Send(ctx context.Context, target Target, p Payload) error
	// Close stops the channel and rejects its pending requests with
	// ErrClosed.
	Close() error
}

// Connect makes d deliver its messages to agent: d.Listen with a
// dispatcher that sends replies back through d.
func Connect(ctx context.Context, agent *spool.Agent, d Driver) (*AgentDispatcher, error) {
	ad := NewDispatcher(agent, d)
	if err := d.Listen(ctx, ad); err != nil {
		return nil, fmt.Errorf("channel: %s: listen: %w", d.Name(), err)
	}
	return ad, nil
}

// AgentDispatcher is the Dispatcher of one agent and one driver. It keeps
// a queue per session and a worker for each session with work, so
// different sessions run concurrently and one session's messages run in
// dispatch order.
//
// An Inbound with a Delivery is claimed first in the agent's store (see
// the package documentation, "Deliveries"): a delivery claimed before, by
// this process or another sharing the store, before or after a restart, is
// refused with ErrDuplicate, and a store that cannot be reached fails the
// Dispatch, so the platform retries later.
type AgentDispatcher struct {
	agent *spool.Agent
	out   Driver
	seen  *ledger

	mu     sync.Mutex
	queues map[Target][]job
	wg     sync.WaitGroup
}

type job struct {
	ctx context.Context
	in  Inbound
}

// NewDispatcher returns a dispatcher that runs messages through agent and
// sends the replies through out.
func NewDispatcher(agent *spool.Agent, out Driver) *AgentDispatcher {
	return &AgentDispatcher{
		agent:  agent,
		out:    out,
		seen:   newLedger(agent.Store(), agent.Name()),
		queues: map[Target][]job{},
	}
}

// Agent returns the agent the dispatcher runs messages through: a driver
// learns from it whether sessions are user-scoped.
func (d *AgentDispatcher) Agent() *spool.Agent { return d.agent }

// Observe hands o to the agent's observers (see spool.Agent.Observe): a
// driver reports through it what it posted, or failed to post.
func (d *AgentDispatcher) Observe(ctx context.Context, o spool.Observation) {
	d.agent.Observe(ctx, o)
}

// Dispatch implements Dispatcher.
func (d *AgentDispatcher) Dispatch(ctx context.Context, in Inbound) error {
	if in.SessionID == "" {
		return errors.New("channel: an inbound message needs a session id")
	}
	if in.Decision != nil && in.Decision.ApprovalID == "" {
		return errors.New("channel: a decision needs an approval id")
	}
	if in.Delivery != nil {
		fresh, err := d.seen.claim(ctx, *in.Delivery)
		if err != nil {
			return err
		}
		if !fresh {
			return ErrDuplicate
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	q, busy := d.queues[in.Target]
	d.queues[in.Target] = append(q, job{ctx: ctx, in: in})
	if !busy {
		d.wg.Add(1)
		go d.work(in.Target)
	}
	return nil
}

// Wait waits until every dispatched message has had its final payload.
func (d *AgentDispatcher) Wait() { d.wg.Wait() }

// work runs a session's queue until it is empty.
func (d *AgentDispatcher) work(t Target) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		q := d.queues[t]
		if len(q) == 0 {
			delete(d.queues, t)
			d.mu.Unlock()
			return
		}
		j := q[0]
		d.queues[t] = q[1:]
		d.mu.Unlock()
		d.run(j)
	}
}

// run answers one message: every event of its turn, then the final
// payload, which is sent even when the turn could not run.
func (d *AgentDispatcher) run(j job) {
	ctx := j.ctx
	if j.in.User != "" {
		ctx = spool.ContextWithUser(ctx, j.in.User)
	}
	final := Payload{Final: true, Origin: j.in.Origin}
	defer func() {
		// Without the caller's cancellation: the request must learn how
		// its turn ended even when that was because it was cancelled.
		_ = d.out.Send(context.WithoutCancel(ctx), j.in.Target, final)
	}()
	if err := ctx.Err(); err != nil {
		final.Err = err
		return
	}
	sess, err := d.agent.Session(ctx, j.in.SessionID)
	if err != nil {
		final.Err = err
		return
	}
	var events iter.Seq2[spool.Event, error]
	if dec := j.in.Decision; dec != nil {
		events = sess.Resolve(ctx, dec.ApprovalID, dec.Decision)
	} else {
		events = sess.Stream(ctx, j.in.Text)
	}
	for ev, err := range events {
		if err != nil {
			final.Err = err
			return
		}
		if ev.Kind == spool.EventTurnEnd {
			final.Result = ev.Result
		}
		if err := d.out.Send(ctx, j.in.Target, Payload{Event: &ev, Origin: j.in.Origin}); err != nil {
			// Stopping the iteration stops the turn; the runtime records
			// it cancelled.
			final.Err = err
			return
		}
	}
}
