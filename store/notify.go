package store

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Notifier carries short messages between the processes that share a
// store, per session: what a running turn streams before its entries are
// appended (its text as it comes), so that a client connected to another
// replica can follow it. Messages are not durable: a listener gets those
// notified while it listens, in order, and no others. Package spool uses
// it for live turns (Session.Watch, Session.Stop); without it a replica
// follows other replicas' turns only through the transcript (polled).
//
// A message may be of any length and any bytes (a live turn's snapshot
// of its events so far can be megabytes): a store whose transport limits
// a payload splits it (pgstore sends it in chunks of one transaction).
// The memory store's Hub, pgstore (LISTEN/NOTIFY), redisstore
// (pub/sub), and on Unix filestore and sqlitestore (Unix domain sockets
// between the processes of one machine sharing the store) implement it; storetest's Notifier/* checks hold every one to
// this contract.
type Notifier interface {
	// Notify sends msg to every listener of key, in this process and in
	// the others sharing the store. It does not wait for them.
	Notify(ctx context.Context, key Key, msg []byte) error
	// Listen returns the messages notified on key from now on (it
	// returns once listening), until ctx ends, when the channel is
	// closed. A listener that falls behind by more than the store's
	// buffer is dropped: its channel is closed early, and it listens
	// again and catches up another way.
	Listen(ctx context.Context, key Key) (<-chan []byte, error)
}

// FuncListener is a Notifier that can also hand each message to a
// function instead of a channel: such a listener costs no channel, no
// context and no goroutine of its own, which matters to a process that
// keeps one per session it ran lately (package spool's live turns). The
// memory store (a Hub) implements it; ListenFunc gives the same to any
// Notifier.
type FuncListener interface {
	// ListenFunc calls fn with each message notified on key from now on
	// (it returns once listening), in order, until stop is called; after
	// stop returns fn is not called again. A listener the Notifier drops
	// (its transport may have lost messages) gets fn(nil), once, and no
	// more. fn runs on the goroutine delivering the message (for a Hub,
	// Notify's, holding the Hub's lock), so it must not block and must
	// not call the Notifier or stop; fn(nil) is called without any lock
	// held, and may.
	ListenFunc(key Key, fn func(msg []byte)) (stop func(), err error)
}

// ListenFunc calls s's ListenFunc when s is a FuncListener; for any other
// Notifier it listens with Listen and calls fn from a goroutine of its
// own, with the same contract. It is errors.ErrUnsupported when s is not
// a Notifier.
func ListenFunc(s Store, key Key, fn func(msg []byte)) (stop func(), err error) {
	if l, ok := s.(FuncListener); ok {
		return l.ListenFunc(key, fn)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := Listen(ctx, s, key)
	if err != nil {
		cancel()
		return nil, err
	}
	var mu sync.Mutex // held while fn runs, so that after stop fn is not called
	stopped := false
	go func() {
		for msg := range ch {
			mu.Lock()
			if !stopped {
				fn(msg)
			}
			mu.Unlock()
		}
		mu.Lock()
		dropped := !stopped // the channel closed, and not by stop
		stopped = true
		mu.Unlock()
		if dropped {
			fn(nil)
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		cancel()
	}, nil
}

// ListenerCounter is a Notifier that knows every listener of a key, in
// every process sharing the store: one whose processes are one (the
// memory store's Hub). A sender may leave out what nobody would get:
// package spool does not encode a run's events while the only listener
// of its session is its own.
type ListenerCounter interface {
	// Listeners returns how many listeners key has now (Listen's and
	// ListenFunc's), and false when it cannot know.
	Listeners(key Key) (int, bool)
}

// Listeners calls s's Listeners, or is false (not known) when s is not a
// ListenerCounter.
func Listeners(s Store, key Key) (int, bool) {
	if c, ok := s.(ListenerCounter); ok {
		return c.Listeners(key)
	}
	return 0, false
}

// Notify calls s's Notify, or is errors.ErrUnsupported when s is not a
// Notifier.
func Notify(ctx context.Context, s Store, key Key, msg []byte) error {
	if n, ok := s.(Notifier); ok {
		return n.Notify(ctx, key, msg)
	}
	return errors.ErrUnsupported
}

// Listen calls s's Listen, or is errors.ErrUnsupported when s is not a
// Notifier.
func Listen(ctx context.Context, s Store, key Key) (<-chan []byte, error) {
	if n, ok := s.(Notifier); ok {
		return n.Listen(ctx, key)
	}
	return nil, errors.ErrUnsupported
}

// ListenBuffer is how many messages a listener of a Hub may fall behind
// before it is dropped.
const ListenBuffer = 4096

// hubChan is the capacity of a Hub listener's channel. A listener
// usually keeps up (a turn notifies a handful of messages), so its
// channel is small and what it falls behind beyond that waits in a queue
// that grows as needed, up to ListenBuffer in all: a listener costs
// a few hundred bytes, not ListenBuffer slots, and only one that falls
// behind costs a goroutine.
const hubChan = 16

// Hub is an in-process Notifier, for stores whose processes are one (the
// memory store) and for a store of one's own to embed. The zero Hub is
// ready to use. Notify never waits: a listener that is ListenBuffer
// messages behind is dropped.
type Hub struct {
	mu sync.Mutex
	// subs are each key's listeners. A key's slice is never written in
	// place: dropLocked makes a new one, so that Notify may go on ranging
	// over the one it began with while a listener it calls is dropped.
	// A slice rather than a set because most keys have one listener
	// (a session's, in each process), and a process may keep thousands.
	subs map[Key][]*hubSub
}

// hubSub is one listener. Its messages go straight into ch while ch has
// room and nothing is queued; otherwise into queue, which a goroutine
// (pump) moves into ch in order. Whoever is last to send on ch closes
// it: dropLocked when no pump runs, else the pump. A dropped listener
// still gets what was queued before, as it would from a channel of
// ListenBuffer slots, unless its context ended (abandoned, done closed).
type hubSub struct {
	fn        func([]byte) // a ListenFunc listener: called instead of ch
	ch        chan []byte
	queue     [][]byte
	pumping   bool
	done      chan struct{} // made when a pump starts
	closed    bool          // dropped: no more messages, ch closed once the pump is done
	abandoned bool          // the context ended: the pump stops sending
}

// Notify implements Notifier.
func (h *Hub) Notify(ctx context.Context, key Key, msg []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, sub := range h.subs[key] {
		h.sendLocked(key, sub, msg)
	}
	return nil
}

func (h *Hub) sendLocked(key Key, sub *hubSub, msg []byte) {
	if sub.fn != nil {
		sub.fn(msg)
		return
	}
	if len(sub.queue) == 0 {
		select {
		case sub.ch <- msg:
			return
		default:
		}
	}
	if len(sub.ch)+len(sub.queue) >= ListenBuffer {
		h.dropLocked(key, sub, nil) // a channel's: nothing to call
		return
	}
	sub.queue = append(sub.queue, msg)
	if !sub.pumping {
		sub.pumping = true
		sub.done = make(chan struct{})
		go h.pump(sub)
	}
}

// pump moves sub's queue into its channel, in order, until the queue is
// empty or the listener's context ends; then, if sub was dropped, it
// closes the channel. A message leaves the queue only once it is in the
// channel, so the two together never hold more than ListenBuffer.
func (h *Hub) pump(sub *hubSub) {
	h.mu.Lock()
	for !sub.abandoned && len(sub.queue) > 0 {
		msg := sub.queue[0]
		h.mu.Unlock()
		select {
		case sub.ch <- msg:
		case <-sub.done:
		}
		h.mu.Lock()
		if !sub.abandoned {
			sub.queue[0] = nil
			sub.queue = sub.queue[1:]
		}
	}
	sub.pumping = false
	sub.queue = nil
	if sub.closed {
		close(sub.ch)
	}
	h.mu.Unlock()
}

// Listen implements Notifier.
func (h *Hub) Listen(ctx context.Context, key Key) (<-chan []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &hubSub{ch: make(chan []byte, hubChan)}
	h.add(key, sub)
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.dropLocked(key, sub, nil)
		if sub.pumping && !sub.abandoned {
			sub.abandoned = true
			close(sub.done)
		}
	})
	return sub.ch, nil
}

// Listeners implements ListenerCounter: a Hub's listeners are all in
// this process.
func (h *Hub) Listeners(key Key) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[key]), true
}

// ListenFunc implements FuncListener.
func (h *Hub) ListenFunc(key Key, fn func(msg []byte)) (stop func(), err error) {
	sub := &hubSub{fn: fn}
	h.add(key, sub)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.dropLocked(key, sub, nil) // stopped, not dropped: fn is not called
	}, nil
}

func (h *Hub) add(key Key, sub *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[Key][]*hubSub{}
	}
	h.subs[key] = append(h.subs[key], sub)
}

// DropAll closes the channel of every listener, as Notify does to one
// that fell behind (a ListenFunc listener gets fn(nil)): for a Notifier
// that embeds a Hub and whose transport may have lost messages (a
// connection to its server dropped and came back), so that its
// listeners catch up another way instead of missing something silently.
func (h *Hub) DropAll() {
	h.mu.Lock()
	var fns []func([]byte)
	for key, subs := range h.subs {
		for _, sub := range subs {
			fns = h.dropLocked(key, sub, fns)
		}
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(nil)
	}
}

// Drop closes the channel of every listener of key (see DropAll).
func (h *Hub) Drop(key Key) {
	h.mu.Lock()
	var fns []func([]byte)
	for _, sub := range h.subs[key] {
		fns = h.dropLocked(key, sub, fns)
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(nil)
	}
}

// dropLocked drops sub, appending its function to fns when it is a
// ListenFunc listener: the caller calls it with nil once h.mu is let go.
func (h *Hub) dropLocked(key Key, sub *hubSub, fns []func([]byte)) []func([]byte) {
	if sub.closed {
		return fns
	}
	sub.closed = true
	if sub.fn != nil {
		fns = append(fns, sub.fn)
	} else if !sub.pumping {
		close(sub.ch)
	}
	// A new slice, not the one Notify may be ranging over (see Hub.subs).
	if rest := slices.DeleteFunc(slices.Clone(h.subs[key]), func(s *hubSub) bool { return s == sub }); len(rest) > 0 {
		h.subs[key] = rest
	} else {
		delete(h.subs, key)
	}
	return fns
}
