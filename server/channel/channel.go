// Package channel connects an agent to the places its messages come from.
//
// A channel driver (Driver) receives messages from somewhere (an HTTP
// route, a chat platform, a test) and hands each one to a Dispatcher,
// which runs it through the agent's normal request path and sends the
// reply back through the same driver, to the session the message came
// from. The HTTP channel of package server is one driver; package
// channel/mock is an in-process one for deterministic tests of agents.
//
// Guarantees:
//
//   - Messages of one session are answered one at a time, in the order the
//     driver dispatched them (Dispatch order is arrival order), and every
//     dispatched message gets exactly one final Payload, however its turn
//     ends.
//   - Replies flow with backpressure: a driver's Send returns once the
//     payload is handed on, and the next event of the turn is produced only
//     then. A Send that fails (the listener went away, the channel closed)
//     stops the turn, which the runtime records as cancelled.
//   - Closing a driver rejects the requests it holds with ErrClosed.
package channel

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
}

// Dispatcher runs inbound messages through an agent.
type Dispatcher interface {
	// Dispatch queues in behind the messages of its session dispatched
	// before it, and returns. The reply goes out through the driver's Send
	// to in.Target. ctx bounds the turn: when it is cancelled the turn
	// stops (recorded cancelled), or never starts.
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
		return nil, fmt.Errorf("channel %s: listen: %w", d.Name(), err)
	}
	return ad, nil
}

// AgentDispatcher is the Dispatcher of one agent and one driver. It keeps
// a queue per session and a worker for each session with work, so
// different sessions run concurrently and one session's messages run in
// dispatch order.
type AgentDispatcher struct {
	agent *spool.Agent
	out   Driver

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
	return &AgentDispatcher{agent: agent, out: out, queues: map[Target][]job{}}
}

// Dispatch implements Dispatcher.
func (d *AgentDispatcher) Dispatch(ctx context.Context, in Inbound) error {
	if in.SessionID == "" {
		return errors.New("channel: an inbound message needs a session id")
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
	final := Payload{Final: true}
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
	for ev, err := range sess.Stream(ctx, j.in.Text) {
		if err != nil {
			final.Err = err
			return
		}
		if ev.Kind == spool.EventTurnEnd {
			final.Result = ev.Result
		}
		if err := d.out.Send(ctx, j.in.Target, Payload{Event: &ev}); err != nil {
			// Stopping the iteration stops the turn; the runtime records
			// it cancelled.
			final.Err = err
			return
		}
	}
}
