package store

import (
	"context"
	"errors"
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
// The memory store's Hub, pgstore (LISTEN/NOTIFY) and redisstore
// (pub/sub) implement it; storetest's Notifier/* checks hold every one to
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

// Hub is an in-process Notifier, for stores whose processes are one (the
// memory store) and for a store of one's own to embed. The zero Hub is
// ready to use. Notify never waits: a listener whose buffer
// (ListenBuffer) is full is dropped.
type Hub struct {
	mu   sync.Mutex
	subs map[Key]map[*hubSub]struct{}
}

type hubSub struct {
	ch     chan []byte
	closed bool
}

// Notify implements Notifier.
func (h *Hub) Notify(ctx context.Context, key Key, msg []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[key] {
		select {
		case sub.ch <- msg:
		default:
			h.dropLocked(key, sub)
		}
	}
	return nil
}

// Listen implements Notifier.
func (h *Hub) Listen(ctx context.Context, key Key) (<-chan []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := &hubSub{ch: make(chan []byte, ListenBuffer)}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[Key]map[*hubSub]struct{}{}
	}
	if h.subs[key] == nil {
		h.subs[key] = map[*hubSub]struct{}{}
	}
	h.subs[key][sub] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.dropLocked(key, sub)
	})
	return sub.ch, nil
}

// DropAll closes the channel of every listener, as Notify does to one
// that fell behind: for a Notifier that embeds a Hub and whose transport
// may have lost messages (a connection to its server dropped and came
// back), so that its listeners catch up another way instead of missing
// something silently.
func (h *Hub) DropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, subs := range h.subs {
		for sub := range subs {
			h.dropLocked(key, sub)
		}
	}
}

// Drop closes the channel of every listener of key (see DropAll).
func (h *Hub) Drop(key Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[key] {
		h.dropLocked(key, sub)
	}
}

func (h *Hub) dropLocked(key Key, sub *hubSub) {
	if sub.closed {
		return
	}
	sub.closed = true
	close(sub.ch)
	delete(h.subs[key], sub)
	if len(h.subs[key]) == 0 {
		delete(h.subs, key)
	}
}
