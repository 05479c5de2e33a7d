package channel

import (
	"context"
	"sync"
)

// Pending is a request waiting for its reply, held by a Queue. Its
// consumer reads Payloads until the final one, or stops with Abandon.
type Pending struct {
	target   Target
	ch       chan Payload
	gone     chan struct{}
	rejected chan struct{}
	once     sync.Once
}

// Payloads delivers the reply, one payload at a time; the last is Final.
func (p *Pending) Payloads() <-chan Payload { return p.ch }

// Rejected is closed when the channel was closed before the reply was
// complete (ErrClosed).
func (p *Pending) Rejected() <-chan struct{} { return p.rejected }

// Abandon tells the queue that nobody reads the reply any more (the
// client went away): the next Send for it fails with ErrGone, which stops
// the turn. Calling it after the final payload is harmless.
func (p *Pending) Abandon() { p.once.Do(func() { close(p.gone) }) }

// Queue holds a request/response channel's pending requests per target, in
// arrival order, and routes each Send to the oldest request of its target:
// the bookkeeping every driver that answers requests needs (the HTTP
// channel, the mock channel). The zero Queue is ready to use.
type Queue struct {
	mu       sync.Mutex
	closed   bool
	byTarget map[Target][]*Pending
}

// Accept dispatches in to d and queues a pending request for its reply, as
// one step: the order of Accept calls is the order of the replies. When
// accepted is not nil it is called inside that step, so a caller can
// record arrival order exactly. It fails with ErrClosed after Close.
func (q *Queue) Accept(ctx context.Context, d Dispatcher, in Inbound, accepted func()) (*Pending, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, ErrClosed
	}
	p := &Pending{target: in.Target, ch: make(chan Payload), gone: make(chan struct{}), rejected: make(chan struct{})}
	// The dispatcher only queues here; a worker that sends at once waits
	// on q.mu until p is in place.
	if err := d.Dispatch(ctx, in); err != nil {
		return nil, err
	}
	if q.byTarget == nil {
		q.byTarget = map[Target][]*Pending{}
	}
	q.byTarget[in.Target] = append(q.byTarget[in.Target], p)
	if accepted != nil {
		accepted()
	}
	return p, nil
}

// Deliver hands p to the oldest pending request of target and waits until
// its consumer takes it. A final payload retires the request, whether or
// not anyone still reads it.
func (q *Queue) Deliver(ctx context.Context, target Target, p Payload) error {
	q.mu.Lock()
	list := q.byTarget[target]
	if len(list) == 0 {
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return ErrClosed
		}
		return ErrNoPending
	}
	head := list[0]
	if p.Final {
		if len(list) == 1 {
			delete(q.byTarget, target)
		} else {
			q.byTarget[target] = list[1:]
		}
	}
	q.mu.Unlock()
	select {
	case head.ch <- p:
		return nil
	case <-head.gone:
		return ErrGone
	case <-head.rejected:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close rejects every pending request with ErrClosed and refuses new ones.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	for _, list := range q.byTarget {
		for _, p := range list {
			close(p.rejected)
		}
	}
	q.byTarget = nil
}

// Len returns how many requests wait on target, the one being answered
// included.
func (q *Queue) Len(target Target) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.byTarget[target])
}
