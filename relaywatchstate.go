package spool

import (
	"context"
	"maps"
	"slices"
	"time"
)

// relayWatch is the state of one watchRelayed call, kept in one place so
// that each of its loop's wake-ups (a notification, the sync timer, the
// probe ticker) is a method that moves it on: where the watcher is in
// the session's runs, what it knows of runs it cannot yield yet, and
// what it asked the processes running them. Every method reads a field
// as it is at that moment, set by whichever method last moved it. Only
// the watch's goroutine uses it (watchStored calls yield on it too).
type relayWatch struct {
	s      *Session
	yield  func(Event, error) bool // the watcher's: false, and the watch is over
	follow bool                    // opt.Follow: on past a turn's end, to the next

	// after is the id of the last event yielded (or where the watch
	// starts: opt.After, then what a snap, the first event of a run or
	// the transcript says).
	after EventID
	nonce string // the watch's own sync's: a snap answering it is the watch's

	// A watcher that resumes in a run asks for it: the process running the
	// session's newest run answers with what it keeps of that run and of
	// every run after it, and a process whose newest run it is answers
	// with that run (a client that reconnects to another replica after
	// the next turn began gets the rest of its own first). Later runs
	// wait until some answer has the run resumed in (resumed), or until
	// syncWait passed without one (resumeBy: no process keeps it).
	resuming bool      // after is an id inside a run, not a stored one
	resumed  bool      // some answer had the run resumed in (true when not resuming)
	resumeBy time.Time // when the transcript is read for it without one

	// On a store that cannot count its listeners, a run heard of only by
	// its first events is asked for once, so that its relay notifies the
	// rest (heard): askedPos is the newest run the watch asked for or had
	// a snap of, and joins the nonces of the last few runs asked for,
	// whose snaps have what their relays left out. (A run whose first
	// events come before the snap of the watch's first sync is asked for
	// twice; the two snaps join by event id.) On one that counts them, a
	// relay notifies every event while anyone else listens.
	counts   bool     // the store counts its listeners
	askedPos int64    // the newest run asked for or had a snap of
	joins    []string // the last few (cap 4) join syncs' nonces, oldest first

	known map[int64]map[int64]Event // each run's events by place, as far as known

	// The run the watcher had last whole, and its turn (before any, the
	// transcript's end where the watch began, and no turn): a newer
	// run's first notification after it makes the watch look in the
	// transcript for a run between whose notifications were all lost
	// (checked: the newest run looked for).
	endedPos  int64
	endedTurn string
	checked   int64
	// endedPending are the approvals that run's turn waited on when it
	// paused there (none when it ended): a decision of one of them in
	// the transcript begins a run the watcher has not had.
	endedPending []Approval

	synced bool // the watch knows where it starts: a snap, a run's first event, or the timer told it

	// The run the watcher is in the middle of (-1: none), and the events
	// of it that it had, by kind, and of the step it is in, for a move to
	// the transcript.
	inRun int64
	seen  map[EventKind]int
	step  *partStep

	heard   time.Time // when a run's process was last heard from (set as the watch begins)
	probing string    // the nonce of a probe that has not been answered
	asked   time.Time // when that probe went out
}

// newRelayWatch is the state of a watch from opt.After that has heard
// nothing yet: no run known, none asked for, none in the middle, and
// none had whole but the one a stored id ends.
func newRelayWatch(s *Session, opt WatchOptions, yield func(Event, error) bool) *relayWatch {
	w := &relayWatch{
		s: s, yield: yield, follow: opt.Follow, after: opt.After,
		askedPos: -1, joins: make([]string, 0, 4),
		known:    map[int64]map[int64]Event{},
		endedPos: -1, checked: -1,
		inRun: -1, seen: map[EventKind]int{},
	}
	w.resuming = !w.after.IsZero() && w.after.N < storedBase
	w.resumed = !w.resuming
	if !w.after.IsZero() && !w.resuming {
		// A watcher that resumes after a stored id had the transcript up
		// to that entry: a run after it that no answer has (its process
		// keeps it no more) is in the transcript from there, begun by
		// any turn's prompt or decision.
		w.endedPos = w.after.Pos
	}
	return w
}

// ended records the run at pos, whose turn end (or pause) is ev, as the
// one the watcher had last whole.
func (w *relayWatch) ended(pos int64, ev Event) {
	w.endedPos, w.endedTurn, w.endedPending = pos, ev.TurnID, nil
	if ev.Result != nil && ev.Result.Status == StatusAwaitingApproval {
		w.endedPending = ev.Result.Pending
	}
}

// keep records ev, an event of the run at pos, in known when it comes
// after `after`. An event of the run resumed in (after's) marks it
// resumed: an answer had it, and later runs wait no more; when ev is
// `after` itself and a turn's end, the watcher had that run whole
// (ended).
func (w *relayWatch) keep(pos int64, ev Event) {
	id, err := ParseEventID(ev.ID)
	if err == nil && id.Pos == pos && pos == w.after.Pos {
		w.resumed = true
		if id.N == w.after.N && ev.Kind == EventTurnEnd {
			// The watcher had the run resumed in whole.
			w.ended(pos, ev)
		}
	}
	if err != nil || id.Pos != pos || (pos == w.after.Pos && id.N <= w.after.N) || pos < w.after.Pos {
		return
	}
	if w.known[pos] == nil {
		w.known[pos] = map[int64]Event{}
	}
	w.known[pos][id.N] = ev
}

// flush yields what is known after `after` in run pos, in order,
// without a gap; it reports false when the watch is over.
func (w *relayWatch) flush(pos int64) bool {
	if pos < w.after.Pos || (w.after.IsZero() && !w.synced) {
		return true // where the watch starts is not known yet
	}
	if !w.resumed && pos > w.after.Pos {
		return true // the rest of the run resumed in comes first
	}
	n := int64(0)
	if pos == w.after.Pos {
		n = w.after.N
	}
	for {
		ev, ok := w.known[pos][n+1]
		if !ok {
			return true
		}
		delete(w.known[pos], n+1)
		n++
		w.after = EventID{Pos: pos, N: n}
		if pos != w.inRun {
			w.inRun, w.seen, w.step = pos, map[EventKind]int{}, nil
		}
		w.seen[ev.Kind]++
		switch ev.Kind {
		case EventStepStart:
			w.step = &partStep{}
		case EventText:
			if w.step != nil {
				w.step.text.WriteString(ev.Text)
			}
		case EventToolCall:
			if w.step != nil {
				w.step.calls++
			}
		case EventStepEnd:
			w.step = nil
		case EventTurnEnd:
			w.inRun, w.step = -1, nil
			w.ended(pos, ev)
		}
		if !w.yield(ev, nil) || (ev.Kind == EventTurnEnd && !w.follow) {
			return false
		}
	}
}

// fromTranscript follows the run at st.from through the transcript to
// its end; it reports false when the watch is over. dead says that
// the run's process does not answer: the turn open in the transcript
// is then closed if no process holds it. A run that a newer one
// followed has ended, and its process may well be there: not dead.
func (w *relayWatch) fromTranscript(ctx context.Context, st stored, dead bool) bool {
	s := w.s
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
				w.ended(id.Pos, ev)
			}
		}
		return w.yield(ev, err)
	})
	if !ok || !w.follow {
		return false
	}
	w.after, w.inRun, w.step, w.probing = last, -1, nil, ""
	w.heard = time.Now()
	// What is known of the runs after it, oldest first, as
	// flushKnown does: a later run waits for the one before it to
	// end, never to be yielded in the middle of it.
	for _, pos := range slices.Sorted(maps.Keys(w.known)) {
		if !w.flush(pos) {
			return false
		}
		if w.after.Pos < pos || w.inRun == pos {
			break // not begun, or not ended
		}
	}
	return true
}

// catchUp looks in the transcript, once for the run at pos (checked),
// for a run between the one the watcher had last whole and that one,
// and yields it from there: read says it found one, ok false that
// the watch is over.
func (w *relayWatch) catchUp(ctx context.Context, pos int64) (read, ok bool) {
	w.checked = pos
	from, missed, err := w.s.missedRun(ctx, w.endedPos, w.endedTurn, w.endedPending, pos)
	if err != nil {
		w.yield(Event{}, err)
		return false, false
	}
	if !missed {
		return false, true
	}
	return true, w.fromTranscript(ctx, stored{from: from, after: w.after, until: pos}, false)
}

// flushKnown flushes the runs known, oldest first, while each is had
// whole: a later run waits for the one before it to end (or to be
// resumed). A watch looks in the transcript, once per run it goes on
// to, for a run between that no answer had: one that resumed (its
// process answered late, or keeps it no more), and one that follows
// when a snap is the first it hears of a run (its ask came after
// the run it asked for was over, and a newer one answered). It
// reports false when the watch is over.
func (w *relayWatch) flushKnown(ctx context.Context) bool {
	for _, pos := range slices.Sorted(maps.Keys(w.known)) {
		if pos < w.after.Pos {
			delete(w.known, pos) // a run the watch is past
			continue
		}
		behind := w.resuming && w.endedTurn != "" || w.synced && w.follow && w.endedPos >= 0 && pos > w.endedPos
		if behind && pos > w.after.Pos && w.inRun < 0 && pos > w.checked {
			if read, ok := w.catchUp(ctx, pos); read || !ok {
				return ok
			}
		}
		if !w.flush(pos) {
			return false
		}
		if w.after.Pos < pos || w.inRun == pos {
			break // not begun, or not ended
		}
	}
	return true
}
