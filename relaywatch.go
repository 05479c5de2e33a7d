package spool

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

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
//
// The watch's state is a relayWatch (relaywatchstate.go); each of the
// loop's wake-ups below is one of its methods, which reports false when
// the watch is over.
func (s *Session) watchRelayed(ctx context.Context, opt WatchOptions, yield func(Event, error) bool) bool {
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
	w := newRelayWatch(s, opt, yield)
	if !w.start(ctx) {
		return true
	}
	if opt.Ready != nil {
		opt.Ready()
	}
	w.heard = time.Now()
	timer := time.NewTimer(syncWait)
	defer timer.Stop()
	tick := time.NewTicker(syncWait / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-timer.C:
			if !w.expired(ctx) {
				return true
			}
		case <-tick.C:
			if !w.ticked(ctx) {
				return true
			}
		case m, ok := <-ch:
			if !ok {
				return true // dropped as too slow: the client reconnects
			}
			if !w.relayed(ctx, m) {
				return true
			}
		}
	}
}

// start sends the watch's sync (see resuming), which the processes that
// keep the session's runs answer with their snaps, and learns whether the
// store counts its listeners (see counts). It reports false when the
// watch is over: the sync could not be sent.
func (w *relayWatch) start(ctx context.Context) bool {
	s := w.s
	w.nonce = transcript.NewID(s.a.now())
	ask := relayMsg{T: "sync", Nonce: w.nonce}
	w.resumeBy = time.Now().Add(syncWait)
	if w.resuming {
		ask.After = w.after.String()
	}
	if err := s.a.notify(ctx, s.key, ask); err != nil {
		w.yield(Event{}, err)
		return false
	}
	_, w.counts = store.Listeners(s.a.cfg.Store, s.key)
	return true
}

// expired is the end of syncWait after the watch's sync, the timer's one
// firing: a watch with no answer by then (not synced) learns where it
// starts from the transcript. It reports false when the watch is over.
func (w *relayWatch) expired(ctx context.Context) bool {
	if w.synced {
		return true
	}
	w.synced, w.resumed = true, true
	// No snap: no process runs a turn of the session. One
	// open in the transcript is one whose process died.
	st, open, err := w.s.storedStart(ctx, w.after)
	if err != nil {
		w.yield(Event{}, err)
		return false
	}
	if open {
		return w.fromTranscript(ctx, st, true)
	}
	if !w.follow {
		return false // no turn runs anywhere
	}
	// The watch begins at the transcript's end: a run after
	// it whose every notification is lost is in the
	// transcript from there (catchUp), as one after a run
	// the watcher had whole.
	w.endedPos = st.from
	// What came meanwhile is of runs that began after the
	// watch did.
	for _, pos := range slices.Sorted(maps.Keys(w.known)) {
		if !w.flush(pos) {
			return false
		}
	}
	return true
}

// ticked looks, every syncWait/4, for what did not come in time: the
// rest of the run resumed in, once resumeBy passed (resumeStored), and
// the events of the run the watcher is in, whose process is probed when
// they stop (probe). It reports false when the watch is over.
func (w *relayWatch) ticked(ctx context.Context) bool {
	if w.synced && !w.resumed && time.Now().After(w.resumeBy) {
		if !w.resumeStored(ctx) {
			return false
		}
	}
	return w.probe(ctx)
}

// resumeStored reads from the transcript the run the watch resumed in,
// which no answer had by resumeBy. It reports false when the watch is
// over.
func (w *relayWatch) resumeStored(ctx context.Context) bool {
	// A snap came (of a later run, from a process that never
	// had the run resumed in), but no process keeps that
	// run: the transcript has the rest of it, and of the
	// runs up to the first one known after it, then on with
	// those. (Without a snap, the timer reads it.)
	w.resumed = true
	st, _, err := w.s.storedStart(ctx, w.after)
	if err != nil {
		w.yield(Event{}, err)
		return false
	}
	if next := slices.Sorted(maps.Keys(w.known)); w.follow && len(next) > 0 {
		st.until = next[0]
	}
	return w.fromTranscript(ctx, st, false)
}

// probe asks, with a sync of its own, whether the process of the run the
// watcher is in is still there when nothing was heard of it for
// probeAfter, and moves to the transcript when it does not answer within
// syncWait: so a watch outlives the process it watched. It reports false
// when the watch is over.
func (w *relayWatch) probe(ctx context.Context) bool {
	switch {
	case w.inRun < 0 || !w.synced:
	case w.probing == "" && time.Since(w.heard) > probeAfter:
		w.probing, w.asked = transcript.NewID(w.s.a.now()), time.Now()
		if err := w.s.a.notify(ctx, w.s.key, relayMsg{T: "sync", Nonce: w.probing}); err != nil {
			w.yield(Event{}, err)
			return false
		}
	case w.probing != "" && w.heard.After(w.asked):
		// The run's events still come: its process is there,
		// only slow to answer (a big snap, a loaded machine).
		w.probing = ""
	case w.probing != "" && time.Since(w.asked) > syncWait:
		// The run's process is gone. What the watcher had of the
		// step it is in is not yielded again: the transcript's
		// text of that step goes on from it.
		skip := maps.Clone(w.seen)
		return w.fromTranscript(ctx, stored{from: w.inRun, after: w.after, skip: skip, step: w.step}, true)
	}
	return true
}

// relayed handles one notification of the session's: a run's events
// (relayedEvents) or a process's answer to a sync (relayedSnap); the
// others (a run's end, another watcher's sync) only show, or not, that a
// run's process is there. It reports false when the watch is over.
func (w *relayWatch) relayed(ctx context.Context, m *relayMsg) bool {
	switch m.T {
	case "ev", "snap", "end":
		// Only what the run's process sends shows it is there
		// (another watcher's sync or probe does not; the snap
		// answering another watcher's does, of that run or a
		// newer one). What a run before it sends does not: every
		// process that keeps an older run of the session (one
		// that ended less than RecentTurn ago, in a process that
		// began none since) answers every sync, so the process
		// of the run the watcher is in would look alive after it
		// died, until those forgot their runs.
		if w.inRun < 0 || m.Pos >= w.inRun {
			w.heard = time.Now()
		}
	}
	switch m.T {
	case "ev":
		return w.relayedEvents(ctx, m)
	case "snap":
		return w.relayedSnap(ctx, m)
	}
	return true
}

// relayedEvents takes a run's events as its relay notified them, and
// yields what they complete; first it looks in the transcript for what
// their run's being newer says the watch missed, and asks a run heard of
// first for its snap. It reports false when the watch is over.
func (w *relayWatch) relayedEvents(ctx context.Context, m *relayMsg) bool {
	evs := m.Events // shared with the process's other watchers: read only
	if m.Event != nil {
		evs = []Event{*m.Event}
	}
	if len(evs) == 0 {
		return true
	}
	if w.synced && w.inRun >= 0 && m.Pos > w.inRun {
		// A newer run began, so the run the watch is in has
		// ended, and the watch did not have its end: its
		// relay left out what it was not asked for yet and
		// retired the run before the ask came, or its last
		// notifications come after the newer run's first
		// (two replicas). The transcript has the rest, and
		// (with follow) every run between that one and this.
		st := stored{from: w.inRun, after: w.after, skip: maps.Clone(w.seen), step: w.step}
		if w.follow {
			st.until, w.checked = m.Pos, m.Pos
		}
		if !w.fromTranscript(ctx, st, false) {
			return false
		}
	}
	if w.synced && w.follow && w.inRun < 0 && w.endedPos >= 0 && m.Pos > w.endedPos && m.Pos > w.checked {
		// A run after the last one the watcher had whole: one
		// between whose every notification was lost (a
		// listener's connection that came back) is in the
		// transcript.
		if _, ok := w.catchUp(ctx, m.Pos); !ok {
			return false
		}
	}
	if !w.counts && m.Pos > w.askedPos {
		join := transcript.NewID(w.s.a.now())
		if len(w.joins) == cap(w.joins) {
			w.joins = slices.Delete(w.joins, 0, 1)
		}
		w.askedPos, w.joins = m.Pos, append(w.joins, join)
		if err := w.s.a.notify(ctx, w.s.key, relayMsg{T: "sync", Nonce: join}); err != nil {
			w.yield(Event{}, err)
			return false
		}
	}
	if !w.synced && w.after.IsZero() && w.follow && evs[0].ID == (EventID{Pos: m.Pos, N: 1}).String() {
		// A run's first event, notified after this watch
		// listened: the run began after the watch did, and
		// all of it comes here; no need to wait for syncWait.
		w.synced, w.after = true, EventID{Pos: m.Pos}
	}
	for _, ev := range evs {
		w.keep(m.Pos, ev)
	}
	if !w.flush(m.Pos) {
		return false
	}
	if w.inRun < 0 && !w.flushKnown(ctx) {
		// The run ended: on with the later runs known, which
		// waited for it (their notifications may all be in).
		return false
	}
	return true
}

// relayedSnap takes a process's answer to the watch's sync, to one of
// its joins or to its probe: what the process keeps of its runs, which
// tells a watch not yet synced where it starts. It reports false when
// the watch is over.
func (w *relayWatch) relayedSnap(ctx context.Context, m *relayMsg) bool {
	if m.Nonce == w.probing && w.probing != "" {
		if w.inRun >= 0 && m.Pos < w.inRun {
			// A process that keeps a run before the one probed
			// (see relayed): not the answer, which may never come.
			return true
		}
		w.probing = ""
	} else if m.Nonce != w.nonce && !slices.Contains(w.joins, m.Nonce) {
		return true
	}
	if !w.synced && w.after.IsZero() && !m.Open && !w.follow {
		// Every process that keeps a run answers, the one
		// that ran the last run (ended) as well as the one
		// running a newer: with a turn running in the
		// transcript (an ended run's end is recorded
		// before its answer) the running one's answer is
		// awaited, or the transcript read at syncWait.
		if _, running, err := w.s.openTurnStart(ctx); err != nil {
			w.yield(Event{}, err)
			return false
		} else if running {
			return true
		}
	}
	w.askedPos = max(w.askedPos, m.Pos)
	if !w.synced && w.after.IsZero() {
		// The watch starts at the running run's beginning;
		// a run already over is not replayed.
		w.after = EventID{Pos: m.Pos}
		if !m.Open {
			w.after.N = maxEvents
			if n := len(m.Events); n > 0 && m.Events[n-1].Kind == EventTurnEnd {
				w.ended(m.Pos, m.Events[n-1])
			}
		}
	}
	w.synced = true
	for _, ev := range m.Events {
		// A snap may begin with runs before its own (the
		// resumed one and those after it): each event's id
		// names its run.
		if id, err := ParseEventID(ev.ID); err == nil && id.Pos <= m.Pos {
			w.keep(id.Pos, ev)
		}
	}
	if !w.flushKnown(ctx) {
		return false
	}
	if !m.Open && !w.follow && w.resumed && w.inRun < 0 && w.after.Pos <= m.Pos {
		// Without follow, a snap of a run that ended is all
		// there is to yield.
		return false
	}
	return true
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
