package spool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
)

// Live turns across processes.
//
// With a store that implements store.Notifier (the memory store's
// in-process Hub, Postgres LISTEN/NOTIFY, Redis pub/sub, and any other
// store that does), every run is relayed: the process running it listens
// on the session's key for "sync" (a watcher elsewhere asks for the run's
// events so far: the answer is a "snap" of them) and "stop" (Session.Stop
// from another process), and notifies the run's events on that key as
// they happen ("ev": those ready together in one notification), and its
// end ("end"), to whoever may hear them. A watcher in a process that does
// not run the turn listens, asks for a snap, and joins the two by event
// id: the same ids, so no gap and no repeat. The relay reads the run's
// events like any watcher, so it never slows the turn. A process listens
// once per session (relaySub), however many watchers it has there, and
// decodes each message once for all of them.
//
// Who may hear: on a store that counts its listeners (the memory store),
// anyone but the run's own subscription. On one that cannot (Postgres,
// Redis, another process's socket), a run notifies its first events
// always, and the rest once it was asked for (a sync): a watcher that
// follows the session hears a run begin and asks for it, and one that
// comes later asks when it begins. So a turn nobody watches elsewhere
// costs one notification, not one for each batch of its deltas on every
// replica that listens to the session.

// relayMsg is one notification of the relay.
type relayMsg struct {
	T      string  `json:"t"`               // ev, end, sync, snap, stop
	Nonce  string  `json:"nonce,omitempty"` // sync, and the snap answering it
	Pos    int64   `json:"pos,omitempty"`   // the run (ev, end, snap)
	Event  *Event  `json:"ev,omitempty"`    // ev: one event
	Events []Event `json:"evs,omitempty"`   // ev: several, in order; snap: the run's events so far, after those of the runs before it from the sync's After
	Open   bool    `json:"open,omitempty"`  // snap: the run has not ended
	After  string  `json:"after,omitempty"` // sync: the id of the last event the watcher has, when it resumes in a run
}

// control reports whether b, a relay message as json.Marshal encodes
// relayMsg (T first), is one for a run's relay (sync, stop) rather than
// one of a run's events or snaps, which only watchers read.
func control(b []byte) bool {
	for _, p := range []string{`{"t":"ev"`, `{"t":"snap"`, `{"t":"end"`} {
		if bytes.HasPrefix(b, []byte(p)) {
			return false
		}
	}
	return true
}

// relaySub is a process's one listener on a session's notifications
// (one store.Listen per session key per Agent), shared by the relay of
// the session's run and by the session's watchers: each message is
// decoded once, here, and handed to each of them, so that W watchers in
// a process cost one decode of each relayed message, not W, and one
// store listener (a Hub's buffer of ListenBuffer messages), not W + 1.
// A subscriber that falls behind by subBuffer messages is dropped (its
// channel closed), never waited for; when the store drops the listener,
// every subscriber is, and the next one listens again.
type relaySub struct {
	ready chan struct{} // closed once listening; err says whether it failed
	err   error
	stop  func() // ends the store's listener (store.ListenFunc), under liveHub.subMu
	refs  int    // subscribers, under liveHub.subMu

	mu sync.Mutex
	// outs are the subscribers; never written in place (dropOut makes a
	// new slice), so deliver can range over it while it drops one. Most
	// sessions have one subscriber, their run's relay, and the hub keeps
	// it for RecentTurn after the run: a slice is the least to keep.
	outs []*subOut
	full int  // subscribers that read every message (watchers)
	dead bool // the store's listener ended
}

// subOut is one subscriber of a relaySub.
type subOut struct {
	ch  chan *relayMsg
	fn  func(*relayMsg) // instead of ch: called with each sync and stop, and nil when dropped (a relay)
	all bool            // every message (a watcher), not only sync and stop (a relay)
}

// subBuffer is how many messages a watcher may fall behind its session's
// subscription before it is dropped (the store's own bound, ListenBuffer,
// in pointers rather than encoded messages); controlBuffer, a relay.
const (
	subBuffer     = store.ListenBuffer
	controlBuffer = 256
)

// subscribe returns the decoded notifications of key from now on (it
// returns once listening) and the function that ends the subscription;
// all says whether the subscriber reads every message or only sync and
// stop. It is errors.ErrUnsupported when st is not a store.Notifier.
func (h *liveHub) subscribe(st store.Store, key store.Key, all bool) (<-chan *relayMsg, func(), error) {
	if _, ok := st.(store.Notifier); !ok {
		return nil, nil, errors.ErrUnsupported // before its buffer is made
	}
	out := &subOut{ch: make(chan *relayMsg, subBuffer), all: true}
	if !all {
		out.ch, out.all = make(chan *relayMsg, controlBuffer), false
	}
	off, err := h.attach(st, key, out)
	return out.ch, off, err
}

// subscribeFunc is subscribe for a relay: fn is called, on the
// subscription's goroutine, with each sync and stop of key, and with nil
// when the store drops the listener (then the subscription is over, and
// fn is not called again). fn must not block.
func (h *liveHub) subscribeFunc(st store.Store, key store.Key, fn func(*relayMsg)) (func(), error) {
	return h.attach(st, key, &subOut{fn: fn})
}

// attach adds out to key's subscription, listening first if none is.
func (h *liveHub) attach(st store.Store, key store.Key, out *subOut) (func(), error) {
	all := out.all
	for {
		h.subMu.Lock()
		if h.subs == nil {
			h.subs = map[store.Key]*relaySub{}
		}
		sub := h.subs[key]
		mine := sub == nil
		if mine {
			sub = &relaySub{ready: make(chan struct{})}
			h.subs[key] = sub
		}
		sub.refs++
		h.subMu.Unlock()
		if mine {
			stop, err := store.ListenFunc(st, key, func(b []byte) { h.deliver(key, sub, b) })
			if err != nil {
				sub.err = err
				h.subMu.Lock()
				if h.subs[key] == sub {
					delete(h.subs, key)
				}
				h.subMu.Unlock()
			} else {
				h.subMu.Lock()
				sub.stop = stop
				h.subMu.Unlock()
			}
			close(sub.ready)
		}
		<-sub.ready
		if sub.err != nil {
			h.release(key, sub)
			return nil, sub.err
		}
		sub.mu.Lock()
		if sub.dead {
			// Its listener ended before this subscriber joined: listen
			// again.
			sub.mu.Unlock()
			h.release(key, sub)
			continue
		}
		sub.outs = append(sub.outs, out)
		if all {
			sub.full++
		}
		sub.mu.Unlock()
		var once sync.Once
		return func() {
			once.Do(func() {
				sub.mu.Lock()
				sub.dropOut(out)
				sub.mu.Unlock()
				h.release(key, sub)
			})
		}, nil
	}
}

// dropOut takes out from sub's subscribers, if it is one of them, in a
// new slice (see relaySub.outs). sub.mu is held.
func (sub *relaySub) dropOut(out *subOut) {
	if !slices.Contains(sub.outs, out) {
		return
	}
	sub.outs = slices.DeleteFunc(slices.Clone(sub.outs), func(o *subOut) bool { return o == out })
	if out.all {
		sub.full--
	}
}

// release counts a subscriber of sub gone; the last one ends its
// listener. The listener is stopped without h.subMu held: a Hub calls
// its listeners' functions holding its own lock (deliver), and stop
// takes that lock.
func (h *liveHub) release(key store.Key, sub *relaySub) {
	h.subMu.Lock()
	if sub.refs--; sub.refs > 0 {
		h.subMu.Unlock()
		return
	}
	if h.subs[key] == sub {
		delete(h.subs, key)
	}
	stop := sub.stop
	sub.stop = nil
	h.subMu.Unlock()
	if stop != nil {
		stop()
	}
}

// deliver decodes b, a message of sub's listener, once and hands it to
// every subscriber that reads it, dropping any that is full; a nil b
// says the store dropped the listener. It is the listener's function
// (store.ListenFunc): it runs on the goroutine that delivers the message,
// for the memory store inside Notify, and never blocks.
func (h *liveHub) deliver(key store.Key, sub *relaySub, b []byte) {
	if b == nil {
		h.dead(key, sub)
		return
	}
	ctl := control(b)
	sub.mu.Lock()
	full := sub.full > 0
	sub.mu.Unlock()
	if !ctl && !full {
		return // a run's own events and snaps, with no watcher here: not decoded
	}
	m := new(relayMsg)
	if json.Unmarshal(b, m) != nil {
		return
	}
	var buf [4]func(*relayMsg)
	fns := buf[:0] // called once the lock is let go: a stop runs the run's cancel
	sub.mu.Lock()
	for _, out := range sub.outs {
		if !out.all && !ctl {
			continue
		}
		if out.fn != nil {
			fns = append(fns, out.fn)
			continue
		}
		select {
		case out.ch <- m:
		default:
			close(out.ch) // too slow: dropped, it catches up another way
			sub.dropOut(out)
		}
	}
	sub.mu.Unlock()
	for _, fn := range fns {
		fn(m)
	}
}

// dead ends sub once the store dropped its listener: every subscriber
// is dropped, and the next one listens again.
func (h *liveHub) dead(key store.Key, sub *relaySub) {
	var fns []func(*relayMsg)
	sub.mu.Lock()
	sub.dead = true
	for _, out := range sub.outs {
		if out.fn != nil {
			fns = append(fns, out.fn)
			continue
		}
		close(out.ch)
	}
	sub.outs = nil
	sub.full = 0
	sub.mu.Unlock()
	for _, fn := range fns {
		fn(nil)
	}
	h.subMu.Lock()
	if h.subs[key] == sub {
		delete(h.subs, key)
	}
	h.subMu.Unlock()
}

// syncWait is how long a watcher in a process that runs no turn of the
// session waits for a snap of a turn running elsewhere, before it takes
// it that none runs. A variable for tests that force the move to the
// transcript.
var syncWait = time.Second

func (a *Agent) notify(ctx context.Context, key store.Key, m relayMsg) error {
	b, err := appendRelayMsg(make([]byte, 0, relayMsgSize(&m)), &m)
	if err != nil {
		return err
	}
	return store.Notify(ctx, a.cfg.Store, key, b)
}

// relay relays run t through the store's notifications until it ends;
// with a store that has none it returns at once. Its answers to syncs and
// stops need no goroutine of their own: the session's subscription calls
// them (onControl), until the run retires.
func (a *Agent) relay(t *liveTurn) {
	if !a.listenRelay(t) {
		return
	}
	go func() {
		n := 0
		for {
			evs, done, wake := t.since(n)
			// The events ready together go in one notification (one
			// NOTIFY, one PUBLISH): a model that streams faster than
			// the store notifies costs a round trip per batch, not per
			// delta.
			heard := len(evs) > 0 && a.heard(t, n == 0)
			switch {
			case !heard:
			case len(evs) == 1:
				_ = a.notify(context.Background(), t.key, relayMsg{T: "ev", Pos: t.pos, Event: &evs[0]})
			default:
				_ = a.notify(context.Background(), t.key, relayMsg{T: "ev", Pos: t.pos, Events: evs})
			}
			n += len(evs)
			if done && len(evs) == 0 {
				if a.heard(t, false) {
					_ = a.notify(context.Background(), t.key, relayMsg{T: "end", Pos: t.pos})
				}
				return
			}
			if len(evs) == 0 {
				<-wake
			}
		}
	}()
}

// heard reports whether a notification of run t's events may reach
// anyone; first says the events are the run's first. When the store
// counts the listeners of the session (the memory store): unless the one
// there is is this process's own subscription with no watcher on it.
// When it cannot: for the run's first events, once a watcher asked for
// the run, and when this process has a watcher of the session. What is
// left out is never missed: a watcher that comes later listens first and
// then asks for a snap, which has every event the run had when it was
// asked, those left out among them; one that follows the session hears
// the run's first events and asks then (watchRelayed).
func (a *Agent) heard(t *liveTurn, first bool) bool {
	n, known := store.Listeners(a.cfg.Store, t.key)
	if known {
		return n > 1 || n == 1 && a.live.watched(t.key)
	}
	return first || t.asked.Load() || a.live.watched(t.key)
}

// watched reports whether key's subscription in this process has a
// watcher (one that reads every message).
func (h *liveHub) watched(key store.Key) bool {
	h.subMu.Lock()
	sub := h.subs[key]
	h.subMu.Unlock()
	if sub == nil {
		return false
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.full > 0
}

// listenRelay subscribes run t to the syncs and stops of its session,
// until the run retires: when the session's next run begins, or when the
// hub forgets it (RecentTurn after its end, so that a watcher elsewhere
// that reconnects after the end still gets the rest).
// It reports false when the store has no notifications.
func (a *Agent) listenRelay(t *liveTurn) bool {
	off, err := a.live.subscribeFunc(a.cfg.Store, t.key, func(m *relayMsg) { a.onControl(t, m) })
	if err != nil {
		return false
	}
	t.relayed(off)
	return true
}

// onControl answers m, a sync or a stop for run t; a nil m says the
// store dropped the session's listener: t listens again, a moment later,
// until it retires.
func (a *Agent) onControl(t *liveTurn, m *relayMsg) {
	switch {
	case m == nil:
		t.relayed(nil)
		go func() {
			select {
			case <-t.retired:
			case <-time.After(PollInterval):
				a.listenRelay(t)
			}
		}()
	case m.T == "stop":
		t.stop()
	case m.T == "sync":
		// Asked before the snap is taken: an event the relay left out
		// (it had not been asked yet) is in the snap.
		t.asked.Store(true)
		evs, done, _ := t.since(0)
		if id, err := ParseEventID(m.After); err == nil && id.Pos < t.pos {
			// A watcher resuming in an earlier run: what the hub keeps of
			// it and of the runs between comes first.
			evs = append(a.live.before(t, id.Pos), evs...)
		}
		// Not on the subscription's goroutine: a notify may be a round
		// trip, and the session's other messages wait meanwhile.
		go func() {
			_ = a.notify(context.Background(), t.key, relayMsg{T: "snap", Pos: t.pos, Events: evs, Nonce: m.Nonce, Open: !done})
		}()
	}
}
