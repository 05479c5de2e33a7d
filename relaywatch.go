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
