package spool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
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

// watchRelayed is Watch through the store's notifications, for a session
// whose runs this process does not have. It reports false when the store
// has none.
//
// A run whose process stops answering (it died: no event for probeAfter,
// and no answer to a sync within syncWait) is followed through the
// transcript instead: the steps it stored that the watcher did not have,
// then its end, recorded cancelled once no process holds it (closeDead).
// So is a turn open in the transcript that no process answers for when
// the watch begins.
//
// Two edges are known and left so: a turn whose process has not yet
// listened when the watch's sync goes out is taken for one no process
// answers for, and that one turn is followed step by step through the
// transcript (nothing doubled, nothing missed, but no deltas); and a
// watch that begins after a turn paused on several approvals knows only
// of the ones it sees requested, so when one of them is decided and the
// turn pauses again on another, that second pause does not show.
func (s *Session) watchRelayed(ctx context.Context, opt WatchOptions, yield func(Event, error) bool) bool {
	after, follow := opt.After, opt.Follow
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, unsub, err := s.a.live.subscribe(s.a.cfg.Store, s.key, true)
	if errors.Is(err, errors.ErrUnsupported) {
		return false
	}
	if err != nil {
		yield(Event{}, err)
		return true
	}
	defer unsub()
	nonce := transcript.NewID(s.a.now())
	// A watcher that resumes in a run asks for it: the process running the
	// session's newest run answers with what it keeps of that run and of
	// every run after it, and a process whose newest run it is answers
	// with that run (a client that reconnects to another replica after
	// the next turn began gets the rest of its own first). Later runs
	// wait until some answer has the run resumed in (resumed), or until
	// syncWait passed without one (resumeBy: no process keeps it).
	ask := relayMsg{T: "sync", Nonce: nonce}
	resuming := !after.IsZero() && after.N < storedBase
	resumed, resumeBy := !resuming, time.Now().Add(syncWait)
	if resuming {
		ask.After = after.String()
	}
	if err := s.a.notify(ctx, s.key, ask); err != nil {
		yield(Event{}, err)
		return true
	}
	// On a store that cannot count its listeners, a run heard of only by
	// its first events is asked for once, so that its relay notifies the
	// rest (heard): askedPos is the newest run the watch asked for or had
	// a snap of, and joins the nonces of the last few runs asked for,
	// whose snaps have what their relays left out. (A run whose first
	// events come before the snap of the watch's first sync is asked for
	// twice; the two snaps join by event id.) On one that counts them, a
	// relay notifies every event while anyone else listens.
	_, counts := store.Listeners(s.a.cfg.Store, s.key)
	askedPos, joins := int64(-1), make([]string, 0, 4)
	if opt.Ready != nil {
		opt.Ready()
	}
	known := map[int64]map[int64]Event{} // each run's events by place, as far as known
	// The run the watcher had last whole, and its turn (before any, the
	// transcript's end where the watch began, and no turn): a newer
	// run's first notification after it makes the watch look in the
	// transcript for a run between whose notifications were all lost
	// (checked: the newest run looked for).
	endedPos, endedTurn, checked := int64(-1), "", int64(-1)
	if !after.IsZero() && !resuming {
		// A watcher that resumes after a stored id had the transcript up
		// to that entry: a run after it that no answer has (its process
		// keeps it no more) is in the transcript from there, begun by
		// any turn's prompt or decision.
		endedPos = after.Pos
	}
	// endedPending are the approvals that run's turn waited on when it
	// paused there (none when it ended): a decision of one of them in
	// the transcript begins a run the watcher has not had.
	var endedPending []Approval
	ended := func(pos int64, ev Event) {
		endedPos, endedTurn, endedPending = pos, ev.TurnID, nil
		if ev.Result != nil && ev.Result.Status == StatusAwaitingApproval {
			endedPending = ev.Result.Pending
		}
	}
	keep := func(pos int64, ev Event) {
		id, err := ParseEventID(ev.ID)
		if err == nil && id.Pos == pos && pos == after.Pos {
			resumed = true
			if id.N == after.N && ev.Kind == EventTurnEnd {
				// The watcher had the run resumed in whole.
				ended(pos, ev)
			}
		}
		if err != nil || id.Pos != pos || (pos == after.Pos && id.N <= after.N) || pos < after.Pos {
			return
		}
		if known[pos] == nil {
			known[pos] = map[int64]Event{}
		}
		known[pos][id.N] = ev
	}
	synced := false
	// The run the watcher is in the middle of (-1: none), and the events
	// of it that it had, by kind, and of the step it is in, for a move to
	// the transcript.
	inRun, seen := int64(-1), map[EventKind]int{}
	var step *partStep
	heard := time.Now()
	probing := "" // the nonce of a probe that has not been answered
	var asked time.Time
	timer := time.NewTimer(syncWait)
	defer timer.Stop()
	tick := time.NewTicker(syncWait / 4)
	defer tick.Stop()
	// flush yields what is known after `after` in run pos, in order,
	// without a gap; it reports false when the watch is over.
	flush := func(pos int64) bool {
		if pos < after.Pos || (after.IsZero() && !synced) {
			return true // where the watch starts is not known yet
		}
		if !resumed && pos > after.Pos {
			return true // the rest of the run resumed in comes first
		}
		n := int64(0)
		if pos == after.Pos {
			n = after.N
		}
		for {
			ev, ok := known[pos][n+1]
			if !ok {
				return true
			}
			delete(known[pos], n+1)
			n++
			after = EventID{Pos: pos, N: n}
			if pos != inRun {
				inRun, seen, step = pos, map[EventKind]int{}, nil
			}
			seen[ev.Kind]++
			switch ev.Kind {
			case EventStepStart:
				step = &partStep{}
			case EventText:
				if step != nil {
					step.text.WriteString(ev.Text)
				}
			case EventToolCall:
				if step != nil {
					step.calls++
				}
			case EventStepEnd:
				step = nil
			case EventTurnEnd:
				inRun, step = -1, nil
				ended(pos, ev)
			}
			if !yield(ev, nil) || (ev.Kind == EventTurnEnd && !follow) {
				return false
			}
		}
	}
	// fromTranscript follows the run at st.from through the transcript to
	// its end; it reports false when the watch is over. dead says that
	// the run's process does not answer: the turn open in the transcript
	// is then closed if no process holds it. A run that a newer one
	// followed has ended, and its process may well be there: not dead.
	fromTranscript := func(st stored, dead bool) bool {
		if dead {
			go func() { _ = s.closeDead(ctx, s.openTurnID(ctx)) }()
		}
		// The last turn end it yields is the run the watcher had last
		// whole (ended), as flush records one had live: a run after it
		// whose notifications were all lost is then looked for as
		// after any other.
		last, ok := s.watchStored(ctx, st, false, func(ev Event, err error) bool {
			if ev.Kind == EventTurnEnd {
				if id, err := ParseEventID(ev.ID); err == nil {
					ended(id.Pos, ev)
				}
			}
			return yield(ev, err)
		})
		if !ok || !follow {
			return false
		}
		after, inRun, step, probing = last, -1, nil, ""
		heard = time.Now()
		// What is known of the runs after it, oldest first, as
		// flushKnown does: a later run waits for the one before it to
		// end, never to be yielded in the middle of it.
		for _, pos := range slices.Sorted(maps.Keys(known)) {
			if !flush(pos) {
				return false
			}
			if after.Pos < pos || inRun == pos {
				break // not begun, or not ended
			}
		}
		return true
	}
	// catchUp looks in the transcript, once for the run at pos (checked),
	// for a run between the one the watcher had last whole and that one,
	// and yields it from there: read says it found one, ok false that
	// the watch is over.
	catchUp := func(pos int64) (read, ok bool) {
		checked = pos
		from, missed, err := s.missedRun(ctx, endedPos, endedTurn, endedPending, pos)
		if err != nil {
			yield(Event{}, err)
			return false, false
		}
		if !missed {
			return false, true
		}
		return true, fromTranscript(stored{from: from, after: after, until: pos}, false)
	}
	// flushKnown flushes the runs known, oldest first, while each is had
	// whole: a later run waits for the one before it to end (or to be
	// resumed). A watch looks in the transcript, once per run it goes on
	// to, for a run between that no answer had: one that resumed (its
	// process answered late, or keeps it no more), and one that follows
	// when a snap is the first it hears of a run (its ask came after
	// the run it asked for was over, and a newer one answered). It
	// reports false when the watch is over.
	flushKnown := func() bool {
		for _, pos := range slices.Sorted(maps.Keys(known)) {
			if pos < after.Pos {
				delete(known, pos) // a run the watch is past
				continue
			}
			behind := resuming && endedTurn != "" || synced && follow && endedPos >= 0 && pos > endedPos
			if behind && pos > after.Pos && inRun < 0 && pos > checked {
				if read, ok := catchUp(pos); read || !ok {
					return ok
				}
			}
			if !flush(pos) {
				return false
			}
			if after.Pos < pos || inRun == pos {
				break // not begun, or not ended
			}
		}
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return true
		case <-timer.C:
			if !synced {
				synced, resumed = true, true
				// No snap: no process runs a turn of the session. One
				// open in the transcript is one whose process died.
				st, open, err := s.storedStart(ctx, after)
				if err != nil {
					yield(Event{}, err)
					return true
				}
				if open {
					if !fromTranscript(st, true) {
						return true
					}
					continue
				}
				if !follow {
					return true // no turn runs anywhere
				}
				// The watch begins at the transcript's end: a run after
				// it whose every notification is lost is in the
				// transcript from there (catchUp), as one after a run
				// the watcher had whole.
				endedPos = st.from
				// What came meanwhile is of runs that began after the
				// watch did.
				for _, pos := range slices.Sorted(maps.Keys(known)) {
					if !flush(pos) {
						return true
					}
				}
			}
		case <-tick.C:
			if synced && !resumed && time.Now().After(resumeBy) {
				// A snap came (of a later run, from a process that never
				// had the run resumed in), but no process keeps that
				// run: the transcript has the rest of it, and of the
				// runs up to the first one known after it, then on with
				// those. (Without a snap, the timer reads it.)
				resumed = true
				st, _, err := s.storedStart(ctx, after)
				if err != nil {
					yield(Event{}, err)
					return true
				}
				if next := slices.Sorted(maps.Keys(known)); follow && len(next) > 0 {
					st.until = next[0]
				}
				if !fromTranscript(st, false) {
					return true
				}
			}
			switch {
			case inRun < 0 || !synced:
			case probing == "" && time.Since(heard) > probeAfter:
				probing, asked = transcript.NewID(s.a.now()), time.Now()
				if err := s.a.notify(ctx, s.key, relayMsg{T: "sync", Nonce: probing}); err != nil {
					yield(Event{}, err)
					return true
				}
			case probing != "" && heard.After(asked):
				// The run's events still come: its process is there,
				// only slow to answer (a big snap, a loaded machine).
				probing = ""
			case probing != "" && time.Since(asked) > syncWait:
				// The run's process is gone. What the watcher had of the
				// step it is in is not yielded again: the transcript's
				// text of that step goes on from it.
				skip := maps.Clone(seen)
				if !fromTranscript(stored{from: inRun, after: after, skip: skip, step: step}, true) {
					return true
				}
			}
		case m, ok := <-ch:
			if !ok {
				return true // dropped as too slow: the client reconnects
			}
			switch m.T {
			case "ev", "snap", "end":
				// Only what the run's process sends shows it is there
				// (another watcher's sync or probe does not; the snap
				// answering another watcher's does).
				heard = time.Now()
			}
			switch m.T {
			case "ev":
				evs := m.Events // shared with the process's other watchers: read only
				if m.Event != nil {
					evs = []Event{*m.Event}
				}
				if len(evs) == 0 {
					continue
				}
				if synced && inRun >= 0 && m.Pos > inRun {
					// A newer run began, so the run the watch is in has
					// ended, and the watch did not have its end: its
					// relay left out what it was not asked for yet and
					// retired the run before the ask came, or its last
					// notifications come after the newer run's first
					// (two replicas). The transcript has the rest, and
					// (with follow) every run between that one and this.
					st := stored{from: inRun, after: after, skip: maps.Clone(seen), step: step}
					if follow {
						st.until, checked = m.Pos, m.Pos
					}
					if !fromTranscript(st, false) {
						return true
					}
				}
				if synced && follow && inRun < 0 && endedPos >= 0 && m.Pos > endedPos && m.Pos > checked {
					// A run after the last one the watcher had whole: one
					// between whose every notification was lost (a
					// listener's connection that came back) is in the
					// transcript.
					if _, ok := catchUp(m.Pos); !ok {
						return true
					}
				}
				if !counts && m.Pos > askedPos {
					join := transcript.NewID(s.a.now())
					if len(joins) == cap(joins) {
						joins = slices.Delete(joins, 0, 1)
					}
					askedPos, joins = m.Pos, append(joins, join)
					if err := s.a.notify(ctx, s.key, relayMsg{T: "sync", Nonce: join}); err != nil {
						yield(Event{}, err)
						return true
					}
				}
				if !synced && after.IsZero() && follow && evs[0].ID == (EventID{Pos: m.Pos, N: 1}).String() {
					// A run's first event, notified after this watch
					// listened: the run began after the watch did, and
					// all of it comes here; no need to wait for syncWait.
					synced, after = true, EventID{Pos: m.Pos}
				}
				for _, ev := range evs {
					keep(m.Pos, ev)
				}
				if !flush(m.Pos) {
					return true
				}
				if inRun < 0 && !flushKnown() {
					// The run ended: on with the later runs known, which
					// waited for it (their notifications may all be in).
					return true
				}
			case "snap":
				if m.Nonce == probing && probing != "" {
					probing = ""
				} else if m.Nonce != nonce && !slices.Contains(joins, m.Nonce) {
					continue
				}
				if !synced && after.IsZero() && !m.Open && !follow {
					// Every process that keeps a run answers, the one
					// that ran the last run (ended) as well as the one
					// running a newer: with a turn running in the
					// transcript (an ended run's end is recorded
					// before its answer) the running one's answer is
					// awaited, or the transcript read at syncWait.
					if _, running, err := s.openTurnStart(ctx); err != nil {
						yield(Event{}, err)
						return true
					} else if running {
						continue
					}
				}
				askedPos = max(askedPos, m.Pos)
				if !synced && after.IsZero() {
					// The watch starts at the running run's beginning;
					// a run already over is not replayed.
					after = EventID{Pos: m.Pos}
					if !m.Open {
						after.N = maxEvents
						if n := len(m.Events); n > 0 && m.Events[n-1].Kind == EventTurnEnd {
							ended(m.Pos, m.Events[n-1])
						}
					}
				}
				synced = true
				for _, ev := range m.Events {
					// A snap may begin with runs before its own (the
					// resumed one and those after it): each event's id
					// names its run.
					if id, err := ParseEventID(ev.ID); err == nil && id.Pos <= m.Pos {
						keep(id.Pos, ev)
					}
				}
				if !flushKnown() {
					return true
				}
				if !m.Open && !follow && resumed && inRun < 0 && after.Pos <= m.Pos {
					// Without follow, a snap of a run that ended is all
					// there is to yield.
					return true
				}
			}
		}
	}
}

// missedRun looks in the transcript between from, where a run of turn
// turnID began, and until, where a newer run began, for a run between:
// the first entry that begins one. That is a prompt or an approval
// decision of another turn, or, when that run paused on the approvals
// pending, the decision of one of them: a run that resumed turnID. (A
// decision of turnID that is not one of them was made in the run at
// from, as a session-wide approval decides the turn's other calls.)
func (s *Session) missedRun(ctx context.Context, from int64, turnID string, pending []Approval, until int64) (int64, bool, error) {
	entries, _, err := store.ReadRange(ctx, s.a.cfg.Store, s.key, int(from), int(until))
	if err != nil {
		return 0, false, err
	}
	for i, e := range entries {
		switch {
		case e.Type != transcript.TypeUserMessage && e.Type != transcript.TypeApprovalDecision:
		case e.TurnID != turnID:
			return from + int64(i), true, nil
		case len(pending) > 0 && e.Type == transcript.TypeApprovalDecision:
			var d transcript.ApprovalDecision
			if e.DecodeData(&d) == nil && slices.ContainsFunc(pending, func(a Approval) bool { return a.ID == d.ApprovalID }) {
				return from + int64(i), true, nil
			}
		}
	}
	return 0, false, nil
}

// openTurnID is the id of the turn open in the transcript, or "".
func (s *Session) openTurnID(ctx context.Context) string {
	var id string
	_ = s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		if sl.st.open != nil {
			id = sl.st.open.id
		}
		return nil
	})
	return id
}

// PollInterval is how often a watcher reads the transcript when it
// follows a session through it rather than through notifications: with
// a store that has none (the file and SQLite stores on Windows, a store
// of one's own: those get each step as it is stored, not each delta),
// and for a turn whose process stopped answering (it died) until its
// end is recorded.
const PollInterval = 250 * time.Millisecond

// probeAfter is how long a relayed watch waits without a word from a run
// in progress before it asks whether the run's process is still there
// (a variable, like syncWait).
var probeAfter = 3 * time.Second

// storedBase: an event read from the transcript rather than from the run
// producing it has the id "I.N", where I is its entry's place in the
// transcript and N is storedBase plus the event's place among those of
// the entry (from 0). Such ids sort after every live id of the run that
// wrote the entry (a run at P writes entries at P and after, and its live
// ids are P.1, P.2, … below storedBase) and before every id of a later
// run, so live and stored events of a session are in one order.
const storedBase = 1 << 32

// storedTurn is what a watch through the transcript gathers of a turn:
// for the Result of its end (or its pause), and to tell when it paused.
type storedTurn struct {
	texts   []string                    // the answer, step by step (since the pause, after one)
	usage   transcript.Usage            // what its steps used
	calls   map[string]bool             // calls of its newest step not yet answered (a request or a result)
	unnamed int                         // those calls without an id (a request or a result without a callId answers one)
	pending []Approval                  // approvals requested and not decided
	paused  bool                        // its pause was yielded, and no decision came since
	notice  transcript.GovernanceNotice // its governance notice (Result.Notice, NoticeKind)
}

// await counts call id of t's newest step (or one decided) as not yet
// answered. Calls without an id are counted, not named: a step's two such
// calls are two, each answered by a request or a result without a callId.
func (t *storedTurn) await(id string) {
	if id == "" {
		t.unnamed++
		return
	}
	t.calls[id] = true
}

// answer counts call id as answered (by an approval request or a result).
func (t *storedTurn) answer(id string) {
	if id == "" {
		t.unnamed = max(t.unnamed-1, 0)
		return
	}
	delete(t.calls, id)
}

// storedEvents are the events entry e, at index i of the transcript,
// stands for, with their ids; turns gathers what a turn's end and pause
// carry. A turn paused on approvals (its newest step's calls each have a
// request or a result, and a request waits) ends there as the live run
// does, with StatusAwaitingApproval and the approvals waiting; the
// decision that resumes it begins it again (EventTurnStart), as the
// resumed run does.
func (s *Session) storedEvents(e transcript.Entry, i int64, turns map[string]*storedTurn) []Event {
	var evs []Event
	add := func(ev Event) {
		ev.TurnID = e.TurnID
		ev.ID = EventID{Pos: i, N: storedBase + int64(len(evs))}.String()
		evs = append(evs, ev)
	}
	t := turns[e.TurnID]
	if t == nil {
		// A decision of a turn the watch has not seen begin resumes it
		// (paused before the watch, or a run that begins with it).
		t = &storedTurn{calls: map[string]bool{}, paused: e.Type == transcript.TypeApprovalDecision}
		if e.TurnID != "" {
			turns[e.TurnID] = t
		}
	}
	switch e.Type {
	case transcript.TypeUserMessage:
		add(Event{Kind: EventTurnStart})
	case transcript.TypeAssistantMessage:
		var m transcript.AssistantMessage
		if e.DecodeData(&m) != nil {
			return nil
		}
		add(Event{Kind: EventStepStart})
		if m.Text != "" {
			add(Event{Kind: EventText, Text: m.Text})
			t.texts = append(t.texts, m.Text)
		}
		if m.Usage != nil {
			t.usage = t.usage.Add(*m.Usage)
		}
		clear(t.calls)
		t.unnamed = 0
		for _, c := range m.ToolCalls {
			t.await(c.ID)
			add(Event{Kind: EventToolCall, ToolCall: &c})
		}
		add(Event{Kind: EventStepEnd})
	case transcript.TypeApprovalRequest:
		var r transcript.ApprovalRequest
		if e.DecodeData(&r) != nil {
			return nil
		}
		a := Approval{ID: r.ApprovalID, CallID: r.CallID, Tool: r.Tool, Arguments: r.Arguments, TurnID: e.TurnID, Requested: e.Timestamp}
		t.answer(r.CallID)
		t.pending = append(t.pending, a)
		add(Event{Kind: EventApprovalRequest, Approval: &a})
	case transcript.TypeApprovalDecision:
		var d transcript.ApprovalDecision
		if e.DecodeData(&d) != nil {
			return nil
		}
		// Allowed for the session, it decides the turn's other calls of
		// that tool too: their decisions and results come next, and the
		// run does not pause on them between.
		session, tool := false, ""
		if k := slices.IndexFunc(t.pending, func(a Approval) bool { return a.ID == d.ApprovalID }); k >= 0 {
			session = d.Decision == transcript.VerdictAllow && d.Scope == transcript.ApprovalScopeSession
			tool = t.pending[k].Tool
		}
		t.pending = slices.DeleteFunc(t.pending, func(a Approval) bool {
			if a.ID == d.ApprovalID || session && a.Tool == tool {
				t.await(a.CallID)
				return true
			}
			return false
		})
		if d.CallID != "" {
			t.calls[d.CallID] = true // its result comes next
		}
		if t.paused {
			t.paused = false
			add(Event{Kind: EventTurnStart})
		}
	case transcript.TypeToolResult:
		var r transcript.ToolResult
		if e.DecodeData(&r) != nil {
			return nil
		}
		t.answer(r.CallID)
		add(Event{Kind: EventToolResult, ToolResult: &r})
	case transcript.TypeGovernanceNotice:
		// The run writes it with the turn's end, whose Result carries
		// its message (an ok turn's says the answer is incomplete).
		var d transcript.GovernanceNotice
		if e.DecodeData(&d) == nil {
			t.notice = d
		}
	case transcript.TypeTurnEnd:
		var end transcript.TurnEnd
		if e.DecodeData(&end) != nil {
			return nil
		}
		res := &Result{SessionID: s.key.ID, TurnID: e.TurnID, Status: e.Status, Usage: end.Usage, Error: end.Error, DurationMs: end.DurationMs, Model: s.a.modelName, Notice: t.notice.Message, NoticeKind: t.notice.Kind}
		if e.Status != transcript.StatusResponseBlocked {
			res.Text = strings.Join(t.texts, "\n\n")
		}
		delete(turns, e.TurnID)
		add(Event{Kind: EventTurnEnd, Result: res})
		return evs
	}
	if !t.paused && len(t.pending) > 0 && len(t.calls) == 0 && t.unnamed == 0 {
		t.paused = true
		res := &Result{SessionID: s.key.ID, TurnID: e.TurnID, Status: StatusAwaitingApproval, Text: strings.Join(t.texts, "\n\n"),
			Usage: t.usage, Model: s.a.modelName, Pending: slices.Clone(t.pending)}
		t.texts = nil
		add(Event{Kind: EventTurnEnd, Result: res})
	}
	return evs
}

// stored is where a watch through the transcript starts and what it
// leaves out.
type stored struct {
	from  int64             // the first entry to read
	after EventID           // yield only events after this one
	skip  map[EventKind]int // the first so many stored events of these kinds were had live
	step  *partStep         // the step after those, had live in part (nil: none)
	// until, when not 0, is where the watch through the transcript ends:
	// it yields every run's events before that entry (not only the first
	// turn's, whatever follow says).
	until int64
}

// partStep is what a watcher had live of a step whose end it did not
// have: its start, the text so far, and its first so many tool calls.
type partStep struct {
	text  strings.Builder
	calls int
}

// rest returns what evs, the events of the assistant message that ends
// the step, add to what the watcher had of it: the step's start and the
// text and tool calls it had are left out, so that nothing is yielded
// twice. A stored text that does not go on from the text had (it never
// differs: the step's text is its deltas) yields no text at all rather
// than any again.
func (p *partStep) rest(evs []Event) []Event {
	had, calls := p.text.String(), p.calls
	var out []Event
	for _, ev := range evs {
		switch ev.Kind {
		case EventStepStart:
			continue
		case EventText:
			rest, ok := strings.CutPrefix(ev.Text, had)
			if !ok || rest == "" {
				continue
			}
			ev.Text = rest
		case EventToolCall:
			if calls > 0 {
				calls--
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// watchStored yields the session's events as the transcript has them,
// reading it every PollInterval from st.from, until a turn's end (every
// turn's, with follow, until ctx ends; up to st.until when it is set).
// It returns the id of the last event it yielded (or skipped) and false
// when the watcher stopped or ctx ended.
func (s *Session) watchStored(ctx context.Context, st stored, follow bool, yield func(Event, error) bool) (EventID, bool) {
	turns := map[string]*storedTurn{}
	pos, after := st.from, st.after
	for {
		if st.until > 0 && pos >= st.until {
			return after, true
		}
		// A run of this process that the transcript has nothing of yet
		// is followed live, delta by delta, once what the transcript
		// has before it was read.
		t, next := s.a.live.current(s.key)
		live := t != nil && after.Before(EventID{Pos: t.pos, N: maxEvents})
		if live && t.pos == pos {
			n := 0
			if after.Pos == t.pos {
				n = int(min(after.N, maxEvents))
			}
			last, ok := s.follow(ctx, t, n, yield)
			if !ok || (!follow && st.until == 0) {
				return last, ok
			}
			after = last
			// On from where the run's entries end: the transcript's
			// end by now may be past a run of another process that
			// began since.
			t.mu.Lock()
			end := t.endPos
			t.mu.Unlock()
			if end == 0 {
				_, total, err := store.ReadTail(ctx, s.a.cfg.Store, s.key, 1)
				if err != nil {
					if ctx.Err() == nil {
						yield(Event{}, err)
					}
					return after, false
				}
				end = int64(total)
			}
			pos = max(pos, end)
			continue
		}
		end := math.MaxInt
		if st.until > 0 {
			end = int(st.until)
		}
		if live && t.pos > pos {
			end = min(end, int(t.pos)) // what the transcript has before that run, first
		}
		entries, _, err := store.ReadRange(ctx, s.a.cfg.Store, s.key, int(pos), end)
		if err != nil {
			if ctx.Err() == nil {
				yield(Event{}, err)
			}
			return after, false
		}
		for i, e := range entries {
			evs := s.storedEvents(e, pos+int64(i), turns)
			if len(evs) > 0 {
				if k := skippedAs(e.Type); st.skip[k] > 0 {
					st.skip[k]--
					evs = evs[len(evs)-1:] // only what marks its place
					if evs[0].Kind != EventTurnEnd {
						evs = nil
					}
				} else if e.Type == transcript.TypeAssistantMessage && st.step != nil {
					evs = st.step.rest(evs)
					st.step = nil
				}
			}
			if e.Type == transcript.TypeTurnEnd {
				st.step = nil // a step cut short by the turn's end: never stored
			}
			for _, ev := range evs {
				id, _ := ParseEventID(ev.ID)
				if !after.Before(id) {
					continue
				}
				after = id
				if !yield(ev, nil) {
					return after, false
				}
			}
			if len(evs) > 0 && evs[len(evs)-1].Kind == EventTurnEnd {
				// The turn's end, or its pause: what the watcher had
				// live was of that run.
				st.skip, st.step = nil, nil
				if !follow && st.until == 0 {
					return after, true
				}
			}
		}
		pos += int64(len(entries))
		if len(entries) > 0 {
			continue // a run of this process may have begun meanwhile
		}
		tm := time.NewTimer(PollInterval)
		select {
		case <-ctx.Done():
			tm.Stop()
			return after, false
		case <-next:
		case <-tm.C:
		}
		tm.Stop()
	}
}

// skippedAs is the live event kind that stands for an entry of type typ
// in stored.skip: a watch that had the run live before it went to the
// transcript leaves out the entries whose events it had.
func skippedAs(typ transcript.Type) EventKind {
	switch typ {
	case transcript.TypeUserMessage, transcript.TypeApprovalDecision:
		return EventTurnStart // a decision that begins a run
	case transcript.TypeAssistantMessage:
		return EventStepEnd
	case transcript.TypeApprovalRequest:
		return EventApprovalRequest
	case transcript.TypeToolResult:
		return EventToolResult
	}
	return ""
}

// openTurnStart returns the index in the transcript of the first entry of
// the session's open turn; when no turn is open or the open one waits on
// an approval (no process runs it), it returns the transcript's length as
// the session sees it (zero for one its TTL expired, whose next turn
// starts it afresh) and false: where the next run begins.
func (s *Session) openTurnStart(ctx context.Context) (int64, bool, error) {
	var open string
	var paused bool
	var count int
	err := s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		if sl.st.open != nil {
			open, paused = sl.st.open.id, len(sl.st.pending) > 0
		}
		count = sl.st.count
		return nil
	})
	if err != nil || open == "" || paused {
		return int64(count), false, err
	}
	for n := 16; ; n *= 4 {
		tail, total, err := store.ReadTail(ctx, s.a.cfg.Store, s.key, n)
		if err != nil {
			return 0, false, err
		}
		first := len(tail)
		for first > 0 && tail[first-1].TurnID == open {
			first--
		}
		if first > 0 || len(tail) == total {
			return int64(total - len(tail) + first), true, nil
		}
	}
}

// storedStart is where a watch through the transcript starts for a
// watcher whose last event is after: at the open turn's beginning when
// after is zero (ok false: no turn is open, and it starts at the
// transcript's end), else at after's entry. A live id of a run starts at
// the run's first entry: what the transcript has of the run is yielded
// again, step by step (a process that follows another through the
// transcript cannot know which of the run's deltas the watcher had).
func (s *Session) storedStart(ctx context.Context, after EventID) (stored, bool, error) {
	if after.IsZero() {
		from, ok, err := s.openTurnStart(ctx)
		return stored{from: from}, ok, err
	}
	st := stored{from: after.Pos, after: after}
	if after.N < storedBase {
		st.after = EventID{Pos: after.Pos}
	}
	return st, true, nil
}

// closeDead records the end of turn turnID, open in the transcript, as
// cancelled once no process runs it: with a store lock, as soon as the
// lock is free (the process running the turn holds it until the turn's
// end, and the lock of a process that died is released); without one,
// once it has been idle for Config.StaleTurn. It is what the next turn
// on the session would do first, done now for the session's watchers.
func (s *Session) closeDead(ctx context.Context, turnID string) error {
	return s.with(ctx, writing, func(ctx context.Context, sl *slot) error {
		if t := sl.st.open; t == nil || t.id != turnID || len(sl.st.pending) > 0 {
			return nil
		}
		err := s.settleOpenTurn(ctx, sl, false)
		if errors.Is(err, ErrTurnRunning) {
			return nil
		}
		return err
	})
}

// answers reports whether a process runs a turn of the session (or ran
// one within RecentTurn): whether a sync is answered within syncWait.
func (s *Session) answers(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := store.Listen(ctx, s.a.cfg.Store, s.key)
	if err != nil {
		return false, err
	}
	nonce := transcript.NewID(s.a.now())
	if err := s.a.notify(ctx, s.key, relayMsg{T: "sync", Nonce: nonce}); err != nil {
		return false, err
	}
	timer := time.NewTimer(syncWait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C:
			return false, nil
		case b, ok := <-ch:
			if !ok {
				return false, nil
			}
			var m relayMsg
			if json.Unmarshal(b, &m) == nil && m.T == "snap" && m.Nonce == nonce {
				return m.Open, nil
			}
		}
	}
}
