// Package mock is an in-process channel for deterministic tests of agents:
// a test sends a message in, as a user on a chat platform would, and gets
// the agent's reply back, with every event of the turn, through the same
// channel machinery the HTTP channel uses (per-session FIFO, backpressure,
// rejection on Close).
//
//	ch := mock.New("test")
//	if _, err := channel.Connect(ctx, agent, ch); err != nil { … }
//	reply, err := ch.Ask(ctx, "customer-1", "Where is order 1042?")
//	// reply.Text, reply.Result.Status, reply.Events
package mock

import (
	"context"
	"errors"
	"sync"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
)

// Channel is the mock channel driver. It is safe for concurrent use.
type Channel struct {
	name string
	q    channel.Queue

	mu   sync.Mutex
	d    channel.Dispatcher
	sent []Sent
}

// Sent is one payload the agent sent through the channel.
type Sent struct {
	Target  channel.Target
	Payload channel.Payload
}

// New returns a mock channel named name.
func New(name string) *Channel { return &Channel{name: name} }

// Name implements channel.Driver.
func (c *Channel) Name() string { return c.name }

// Listen implements channel.Driver: messages posted from now on go to d.
func (c *Channel) Listen(ctx context.Context, d channel.Dispatcher) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d = d
	return nil
}

// Send implements channel.Driver: it records p and hands it to the oldest
// call waiting on target.
func (c *Channel) Send(ctx context.Context, target channel.Target, p channel.Payload) error {
	c.mu.Lock()
	c.sent = append(c.sent, Sent{Target: target, Payload: p})
	c.mu.Unlock()
	return c.q.Deliver(ctx, target, p)
}

// Close implements channel.Driver: calls still waiting fail with
// channel.ErrClosed.
func (c *Channel) Close() error {
	c.q.Close()
	return nil
}

// Sent returns every payload the agent has sent through the channel, in
// order.
func (c *Channel) Sent() []Sent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sent(nil), c.sent...)
}

// Reply is the agent's complete answer to one message.
type Reply struct {
	Events []spool.Event // every event of the turn, in order
	Result *spool.Result // how the turn ended, or that it paused on approvals
	Text   string        // Result.Text
}

// Call is a message in flight.
type Call struct {
	done  chan struct{}
	reply Reply
	err   error
}

// Post sends a message into the agent as if it had arrived on the
// channel, and returns at once; Wait gives the reply. Messages of one
// target are answered in the order they were posted. ctx bounds the
// turn: cancelling it stops the turn (recorded cancelled).
func (c *Channel) Post(ctx context.Context, in channel.Inbound) (*Call, error) {
	c.mu.Lock()
	d := c.d
	c.mu.Unlock()
	if d == nil {
		return nil, errors.New("mock: the channel is not listening (use channel.Connect)")
	}
	p, err := c.q.Accept(ctx, d, in, nil)
	if err != nil {
		return nil, err
	}
	call := &Call{done: make(chan struct{})}
	go call.collect(p)
	return call, nil
}

func (call *Call) collect(p *channel.Pending) {
	defer close(call.done)
	for {
		select {
		case pl := <-p.Payloads():
			if !pl.Final {
				call.reply.Events = append(call.reply.Events, *pl.Event)
				continue
			}
			call.err = pl.Err
			if pl.Result != nil {
				call.reply.Result = pl.Result
				call.reply.Text = pl.Result.Text
			}
			return
		case <-p.Rejected():
			call.err = channel.ErrClosed
			return
		}
	}
}

// Wait returns the reply once it is complete. The error is
// channel.ErrClosed when the channel closed first, or why the turn could
// not run; a turn that ran and failed has a nil error and says so in
// Reply.Result.
func (call *Call) Wait(ctx context.Context) (Reply, error) {
	select {
	case <-call.done:
		return call.reply, call.err
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}

// Ask posts text to session sessionID and waits for the reply.
func (c *Channel) Ask(ctx context.Context, sessionID, text string) (Reply, error) {
	call, err := c.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: sessionID}, Text: text})
	if err != nil {
		return Reply{}, err
	}
	return call.Wait(ctx)
}
