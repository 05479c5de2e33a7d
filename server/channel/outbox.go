package channel

import (
	"context"
	"sync"
)

// An outbox delivers one reply's payloads to its platform, in order, on
// a goroutine of its own, so that a platform that is slow (rate limited,
// retrying a failure, refusing for a while) never holds the turn: the
// model's answer is read and recorded at its own pace, and the platform
// gets it as fast as it takes it.
type outbox struct {
	deliver func(context.Context, Payload)

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
}

func newOutbox(deliver func(context.Context, Payload)) *outbox {
	o := &outbox{deliver: deliver, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

// put queues p.
func (o *outbox) put(ctx context.Context, p Payload) {
	o.mu.Lock()
	o.queue = append(o.queue, sending{ctx, p})
	o.mu.Unlock()
	o.signal()
}

// finish delivers final after what is queued, and returns once it is
// delivered.
func (o *outbox) finish(ctx context.Context, final Payload) {
	o.mu.Lock()
	o.final = &sending{ctx, final}
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

func (o *outbox) run() {
	defer close(o.done)
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			final := o.final
			o.mu.Unlock()
			if final != nil {
				o.deliver(final.ctx, final.p)
				return
			}
			<-o.wake
			continue
		}
		s := o.queue[0]
		o.queue[0] = sending{}
		o.queue = o.queue[1:]
		o.mu.Unlock()
		o.deliver(s.ctx, s.p)
	}
}
