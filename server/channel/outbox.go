package channel

import (
	"context"
	"strings"
	"sync"

	"github.com/spool-go/spool"
)

// An outbox delivers one reply's payloads to its platform, in order, on
// a goroutine of its own, so that a platform that is slow (rate limited,
// retrying a failure, refusing for a while) never holds the turn: the
// model's answer is read and recorded at its own pace, and the platform
// gets it as fast as it takes it.
//
// While the platform is behind, the text the model streams meanwhile is
// coalesced: consecutive text events still queued become one, so the
// queue grows with the turn's other events (steps, tool calls), not with
// every delta, and the platform gets one edit with all of it rather than
// one edit per delta, each a call it may make wait.
type outbox struct {
	deliver func(ctx context.Context, p Payload, behind bool)

	mu    sync.Mutex
	queue []sending
	final *sending // set by finish: delivered after the queue
	wake  chan struct{}
	done  chan struct{}
}

// sending is a payload and the context of its Send.
type sending struct {
	ctx context.Context
	p   Payload
	// text, for a text event, gathers its text and that of the text
	// events queued right after it.
	text *strings.Builder
}

func newOutbox(deliver func(context.Context, Payload, bool)) *outbox {
	o := &outbox{deliver: deliver, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

func isText(p Payload) bool { return p.Event != nil && p.Event.Kind == spool.EventText }

// put queues p; a text event joins the text event queued last, when
// nothing came between them.
func (o *outbox) put(ctx context.Context, p Payload) {
	o.mu.Lock()
	if n := len(o.queue); isText(p) && n > 0 && o.queue[n-1].text != nil {
		o.queue[n-1].text.WriteString(p.Event.Text)
		o.mu.Unlock()
		return
	}
	s := sending{ctx: ctx, p: p}
	if isText(p) {
		s.text = new(strings.Builder)
		s.text.WriteString(p.Event.Text)
	}
	o.queue = append(o.queue, s)
	o.mu.Unlock()
	o.signal()
}

// finish delivers final after what is queued, and returns once it is
// delivered.
func (o *outbox) finish(ctx context.Context, final Payload) {
	o.mu.Lock()
	o.final = &sending{ctx: ctx, p: final}
	o.mu.Unlock()
	o.signal()
	<-o.done
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run delivers the queue, telling deliver whether more is queued behind
// each payload (the platform is behind: showing the answer can wait for
// the rest of what came meanwhile).
func (o *outbox) run() {
	defer close(o.done)
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			final := o.final
			o.mu.Unlock()
			if final != nil {
				o.deliver(final.ctx, final.p, false)
				return
			}
			<-o.wake
			continue
		}
		s := o.queue[0]
		o.queue[0] = sending{}
		o.queue = o.queue[1:]
		behind := len(o.queue) > 0 || o.final != nil
		o.mu.Unlock()
		if s.text != nil {
			ev := *s.p.Event
			ev.Text = s.text.String()
			s.p.Event = &ev
		}
		o.deliver(s.ctx, s.p, behind)
	}
}
