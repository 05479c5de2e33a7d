package spool

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/store"
)

// Live turns.
//
// Every run of a turn (from a prompt, a regenerate or an edit, or from an
// approval decision) is registered in its agent's live hub while it runs:
// its events are kept, in order, with their ids, so that any number of
// watchers (Session.Watch) can follow it from its beginning or from any
// event, at their own pace, and Session.Stop can end it. The turn never
// waits on a watcher: a watcher reads the turn's events where they are
// kept and is woken when there are more.
//
// A run's events stay in the hub for RecentTurn after it ended, so that a
// client that lost its connection just before the end still gets the rest
// exactly. The hub keeps a session's runs that way, the newest and up to
// keptRuns in all, so a watcher that resumes after the next turn started,
// or one too slow to keep up with turns that end faster than it reads,
// gets the rest of its own run and then every run after it, in order. A
// watcher behind by more runs than that, or by more than RecentTurn, goes
// on with the oldest run still kept.
//
// A watcher in another process gets the same from the processes that
// ran the runs: its sync names the event it resumes after; the process
// running the session's newest run answers with what it keeps of that
// run and of every run after it, a process whose newest run is the one
// resumed in answers with that run, and the later runs wait (up to
// syncWait) for the rest of that one; a run between that no answer had
// is read from the transcript. A follower that misses
// notifications (a listener's connection that dropped and came back)
// reads what it missed from the transcript, step by step: the rest of
// the run it was in, and any run between the last it had and the one it
// hears begin. A run between begins at a prompt or an approval
// decision of another turn, or at the decision of an approval that the
// turn the watcher had last paused on (a decision of another of the
// turn's calls is part of that run: a session-wide approval decides
// them).

// RecentTurn is how long a finished run's events are kept for watchers
// that reconnect after its end.
const RecentTurn = time.Minute

// keptRuns is how many of a session's runs the hub keeps at most: a
// session running turns back to back (an agent's loop) keeps as many
// while they are recent, not a minute of them.
const keptRuns = 8

// EventID identifies an event of a session. It is written "P.N": P is the
// position of the run that produced the event in the session's transcript
// (how many entries the transcript had when the run began), N the event's
// place in that run, from 1. Ids are monotonic per session (a later run
// begins at a later position) and the same on every replica, since they
// come from the transcript and the run. The zero EventID is "before
// everything".
type EventID struct {
	Pos int64 // entries in the transcript when the run began
	N   int64 // the event's place in its run, from 1
}

// String returns "P.N".
func (id EventID) String() string {
	var buf [41]byte // two int64s and the dot: one allocation, the string's
	return string(id.append(buf[:0]))
}

// append appends id as String writes it.
func (id EventID) append(b []byte) []byte {
	b = strconv.AppendInt(b, id.Pos, 10)
	b = append(b, '.')
	return strconv.AppendInt(b, id.N, 10)
}

// IsZero reports whether id is the zero EventID.
func (id EventID) IsZero() bool { return id == EventID{} }

// Before reports whether id comes before other.
func (id EventID) Before(other EventID) bool {
	return id.Pos < other.Pos || (id.Pos == other.Pos && id.N < other.N)
}

// ErrBadEventID: an event id that is not "P.N" with two non-negative
// integers, or that names no event of the session (Watch).
var ErrBadEventID = errors.New("spool: bad event id")

// ParseEventID parses "P.N". Anything else is ErrBadEventID.
func ParseEventID(s string) (EventID, error) {
	p, n, ok := strings.Cut(s, ".")
	pos, err1 := strconv.ParseInt(p, 10, 64)
	num, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || pos < 0 || num < 0 || len(s) > 41 ||
		signed(p) || signed(n) {
		return EventID{}, fmt.Errorf("%w %q (want P.N, two non-negative integers)", ErrBadEventID, truncate(s, 64))
	}
	return EventID{Pos: pos, N: num}, nil
}

// signed reports whether s begins with a sign, which ParseInt takes and
// an event id has not ("-0" would read as 0).
func signed(s string) bool { return strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-") }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ErrNotRunning: Stop on a session with no turn running.
var ErrNotRunning = errors.New("spool: no turn is running on the session")

// ErrTooManyWatchers: Watch over the agent's bound of watchers, for the
// session (Config.MaxSessionWatchers) or in all (Config.MaxWatchers).
var ErrTooManyWatchers = errors.New("spool: too many watchers")

// liveHub holds the live runs of an agent's sessions.
type liveHub struct {
	mu       sync.Mutex
	turns    map[store.Key]*liveTurn     // the newest run of each session, running or recent (liveTurn.prev: the runs before it)
	next     map[store.Key]chan struct{} // closed when a run begins on the session
	watchers map[store.Key]int           // watchers per session
	total    int                         // watchers in all
	maxEach  int                         // Config.MaxSessionWatchers
	maxAll   int                         // Config.MaxWatchers
	// recent are the finished runs not yet forgotten, in the order they
	// ended (so in the order they are due: each RecentTurn after its
	// end), from the one numbered base; a run the hub stopped keeping
	// early (over keptRuns) is nil there. One timer forgets them all,
	// not one per run.
	recent []recentTurn
	base   int64
	forget *time.Timer

	subMu sync.Mutex
	subs  map[store.Key]*relaySub // each session's one listener in this process (relay.go)
}

func newLiveHub(maxEach, maxAll int) *liveHub {
	return &liveHub{
		turns:    map[store.Key]*liveTurn{},
		next:     map[store.Key]chan struct{}{},
		watchers: map[store.Key]int{},
		maxEach:  maxEach,
		maxAll:   maxAll,
	}
}

// liveTurn is one run's events as watchers see them.
type liveTurn struct {
	key    store.Key
	turnID string
	pos    int64
	cancel context.CancelFunc // nil once the run ended; under mu

	mu     sync.Mutex
	events []Event
	ids    strings.Builder // the events' ids (eventID)
	// wake is closed when events grow or the run ends. It is made only
	// when someone waits (since), so that a run nobody watches makes no
	// channel per event, and one close wakes every waiter of a batch.
	wake  chan struct{}
	done  bool
	lost  bool          // the run ended without its end recorded (the store failed)
	ended chan struct{} // closed when the run ended
	// endPos is the transcript's length once the run recorded its
	// turn's end or pause (0: not known): where the session's next run
	// begins, for a watch through the transcript that had this run live.
	endPos int64
	// retired is closed when the run stops answering other processes'
	// watchers (a newer run of the session began, or the hub forgot
	// it): its relay's subscription ends.
	retired chan struct{}
	retire1 sync.Once
	relay   func()      // ends the relay's subscription (relay.go), when it has one
	asked   atomic.Bool // a watcher elsewhere asked for the run (a sync): its relay notifies every event

	// Under liveHub.mu:
	recent int64     // its number in liveHub.recent once finished; -1 before
	prev   *liveTurn // the session's run before it, while the hub keeps both
	kept   bool      // the hub keeps it for its session's watchers
}

// retire ends t's relay's subscription: the session's newer run, or none,
// answers other processes from now on.
func (t *liveTurn) retire() {
	t.retire1.Do(func() {
		close(t.retired)
		t.relayed(nil)
	})
}

// relayed sets off as what ends t's relay's subscription, ending the one
// it replaces; once t is retired it ends off at once.
func (t *liveTurn) relayed(off func()) {
	t.mu.Lock()
	old := t.relay
	t.relay = off
	select {
	case <-t.retired:
		t.relay = nil
	default:
		off = nil
	}
	t.mu.Unlock()
	if old != nil {
		old()
	}
	if off != nil {
		off()
	}
}

// begin registers a run starting at pos. It returns the session's run it
// follows (nil when none), for the caller to retire once the new run's
// relay listens: retired first, the old run's relay would end the
// session's listener, and the new one listen again, on every turn.
func (h *liveHub) begin(key store.Key, turnID string, pos int64, cancel context.CancelFunc) (t, old *liveTurn) {
	t = &liveTurn{key: key, turnID: turnID, pos: pos, cancel: cancel, ended: make(chan struct{}), retired: make(chan struct{}),
		events: make([]Event, 0, liveEvents), recent: -1, kept: true}
	h.mu.Lock()
	defer h.mu.Unlock()
	old = h.turns[key]
	t.prev = old
	h.turns[key] = t
	// The chain held keptRuns at most: with t, one may be over.
	x := t
	for i := 1; i < keptRuns && x.prev != nil; i++ {
		x = x.prev
	}
	if c := x.prev; c != nil {
		x.prev = nil
		h.unkeepLocked(c)
	}
	if ch := h.next[key]; ch != nil {
		close(ch)
		delete(h.next, key)
	}
	return t, old
}

// unkeepLocked stops keeping t, taken off its session's chain, and
// drops it from recent (its memory goes now, not when it is due).
// h.mu is held.
func (h *liveHub) unkeepLocked(t *liveTurn) {
	t.kept, t.prev = false, nil
	if i := t.recent - h.base; t.recent >= 0 && i >= 0 && i < int64(len(h.recent)) && h.recent[i].t == t {
		h.recent[i].t = nil
	}
}

// stop cancels the run, unless it ended.
func (t *liveTurn) stop() {
	t.mu.Lock()
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// add keeps ev, giving it its id, and wakes the watchers. endPos, for
// the turn's end or pause, is the transcript's length with it recorded
// (0: not known).
func (t *liveTurn) add(ev *Event, endPos int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Kind == EventTurnEnd {
		t.endPos = endPos
	}
	ev.ID = t.eventID(int64(len(t.events)) + 1)
	t.events = append(t.events, *ev)
	if t.wake != nil {
		close(t.wake)
		t.wake = nil
	}
}

// eventID returns the id of t's event n. The run's ids are written one
// after another in t.ids and are substrings of it: a strings.Builder only
// ever appends, so a string it returned is never written over, and a
// run's ids cost an allocation per buffer rather than one each.
// t.mu is held.
func (t *liveTurn) eventID(n int64) string {
	if t.ids.Cap()-t.ids.Len() < 41 {
		t.ids = strings.Builder{} // what it returned stays as it is
		t.ids.Grow(idBuffer)
	}
	start := t.ids.Len()
	var buf [41]byte
	t.ids.Write(EventID{Pos: t.pos, N: n}.append(buf[:0]))
	return t.ids.String()[start:]
}

// idBuffer is the room for a run's event ids at first: a short answer's
// (see liveEvents) at a few thousand entries into a session.
const idBuffer = 160

// liveEvents is the room a run's events get at first: a short answer's
// (its start, a step of a dozen deltas, its end) without growing; a
// longer one grows as it streams.
const liveEvents = 16

// closedWake is a closed channel: the wake of a run that ended.
var closedWake = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// finish marks the run ended, its end recorded or lost (the store
// failed); the hub forgets it after RecentTurn.
func (h *liveHub) finish(t *liveTurn, lost bool) {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.done, t.lost = true, lost
	// Nothing is left to stop, and the cancel holds the run's context,
	// and through it its caller's, for as long as the hub keeps the run.
	t.cancel = nil
	if t.wake != nil {
		close(t.wake)
	}
	t.wake = closedWake
	// The hub keeps the run's events for RecentTurn; room for more than
	// it has would be kept, and scanned by the collector, as long.
	// Watchers keep what since gave them: the events are never written
	// to again.
	if cap(t.events) > len(t.events) {
		t.events = slices.Clone(t.events)
	}
	close(t.ended)
	t.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if t.kept {
		t.recent = h.base + int64(len(h.recent))
		h.recent = append(h.recent, recentTurn{t: t, due: time.Now().Add(RecentTurn)})
		if h.forget == nil {
			h.forget = time.AfterFunc(RecentTurn, h.forgetDue)
		}
	}
}

// recentTurn is a finished run and when the hub forgets it.
type recentTurn struct {
	t   *liveTurn
	due time.Time
}

// forgetDue forgets the finished runs that are due, and sets the timer
// for the next. It retires them once h.mu is let go: retiring ends a
// relay's listener, which takes the store's lock (a Hub's), and a Hub
// calls its listeners under that lock, where a sync's answer reads the
// hub's chain of runs (before) under h.mu.
func (h *liveHub) forgetDue() {
	var retired []*liveTurn
	defer func() {
		for _, t := range retired {
			t.retire()
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for len(h.recent) > 0 && !h.recent[0].due.After(now) {
		if t := h.recent[0].t; t != nil {
			h.forgetLocked(t)
			retired = append(retired, t)
		}
		h.recent[0] = recentTurn{}
		h.recent = h.recent[1:]
		h.base++
	}
	if len(h.recent) == 0 {
		h.recent, h.forget = nil, nil
		return
	}
	// Runs that end close together are forgotten together: a timer
	// per run ending, at thousands of runs a second, costs more than
	// keeping a run a little longer than RecentTurn.
	h.forget.Reset(max(h.recent[0].due.Sub(now), forgetEvery))
}

// forgetLocked takes t off its session's chain of runs (its session's
// newest run, or one before it). h.mu is held.
func (h *liveHub) forgetLocked(t *liveTurn) {
	if h.turns[t.key] == t {
		delete(h.turns, t.key)
		if h.watchers[t.key] == 0 {
			// Nobody waits for the session's next run (leave kept
			// the channel while the run was kept).
			delete(h.next, t.key)
		}
	} else {
		for x := h.turns[t.key]; x != nil; x = x.prev {
			if x.prev == t {
				x.prev = nil // what came before t went before it
				break
			}
		}
	}
	t.kept, t.prev = false, nil
}

// forgetEvery is how often, at most, the hub forgets finished runs.
const forgetEvery = 100 * time.Millisecond

// since returns the events after n (a count), whether the run is over,
// and a channel closed when that changes.
func (t *liveTurn) since(n int) ([]Event, bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wake == nil {
		t.wake = make(chan struct{})
	}
	return t.events[min(n, len(t.events)):], t.overLocked(), t.wake
}

// overLocked reports whether the run is over for its watchers: its
// turn's end is its last event, which it has before finish marks it
// done (a watcher joining in between would otherwise be given the whole
// ended turn as if it were running). t.mu is held.
func (t *liveTurn) overLocked() bool {
	return t.done || (len(t.events) > 0 && t.events[len(t.events)-1].Kind == EventTurnEnd)
}

// over reports whether the run ended with no events after the first n.
func (t *liveTurn) over(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overLocked() && n >= len(t.events)
}

// current returns the session's newest run (nil when none is known) and a
// channel closed when a newer one begins.
func (h *liveHub) current(key store.Key) (*liveTurn, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.currentLocked(key)
}

func (h *liveHub) currentLocked(key store.Key) (*liveTurn, <-chan struct{}) {
	ch := h.next[key]
	if ch == nil {
		ch = make(chan struct{})
		h.next[key] = ch
	}
	return h.turns[key], ch
}

// running returns the session's run that has not ended, or nil.
func (h *liveHub) running(key store.Key) *liveTurn {
	h.mu.Lock()
	t := h.turns[key]
	h.mu.Unlock()
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil
	}
	return t
}

// join counts a watcher of key, within the bounds, and returns what
// current does, as one step: a watcher counted is one that will see the
// session's next run.
func (h *liveHub) join(key store.Key) (*liveTurn, <-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.maxAll > 0 && h.total >= h.maxAll {
		return nil, nil, fmt.Errorf("%w: the agent has %d watchers, its bound", ErrTooManyWatchers, h.total)
	}
	if h.maxEach > 0 && h.watchers[key] >= h.maxEach {
		return nil, nil, fmt.Errorf("%w: session %s has %d watchers, its bound", ErrTooManyWatchers, key, h.watchers[key])
	}
	h.watchers[key]++
	h.total++
	t, next := h.currentLocked(key)
	return t, next, nil
}

func (h *liveHub) leave(key store.Key) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total--
	if h.watchers[key]--; h.watchers[key] <= 0 {
		delete(h.watchers, key)
		if _, ok := h.turns[key]; !ok {
			// Nobody waits for the session's next run any more.
			delete(h.next, key)
		}
	}
}

// Running reports whether a turn of this session is running in this
// process (its Agent value), and its id.
func (s *Session) Running() (turnID string, ok bool) {
	t := s.a.live.running(s.key)
	if t == nil {
		return "", false
	}
	return t.turnID, true
}

// Stop ends the turn running on the session (started by Stream, Send,
// Resolve, Regenerate or Edit, whoever consumes it), in this process or,
// when the store is a store.Notifier, in another sharing the store: it is
// recorded as cancelled, like a turn whose caller's context ended, also
// when a call of its step already waits on an approval (that approval is
// recorded denied, and the call not run). Stop
// returns once the turn's end is recorded, or when ctx ends, with the turn's id. With no turn
// running it is ErrNotRunning; a turn of this process that stopped without
// its end recorded (the store failed) is ErrEndNotRecorded.
func (s *Session) Stop(ctx context.Context) (turnID string, err error) {
	t := s.a.live.running(s.key)
	if t == nil {
		return s.stopElsewhere(ctx)
	}
	t.stop()
	select {
	case <-t.ended:
		t.mu.Lock()
		lost := t.lost
		t.mu.Unlock()
		if lost {
			return t.turnID, fmt.Errorf("%w (turn %s of session %s; the store failed)", ErrEndNotRecorded, t.turnID, s.key)
		}
		return t.turnID, nil
	case <-ctx.Done():
		return t.turnID, ctx.Err()
	}
}

// WatchOptions say where Watch starts and when it ends.
type WatchOptions struct {
	// After is the id of the last event the watcher has: Watch yields the
	// events after it. The zero After starts at the beginning of the run
	// in progress when the watch joins, in this process or another, and
	// yields that run whole, also when it ends before the watch reads it.
	After EventID
	// Follow keeps the watch going after the run ends: later runs of the
	// session are yielded as they happen, until ctx ends. Without it the
	// watch ends with the run (at once when none runs).
	Follow bool
	// Ready, when set, is called once the watch is in place (counted
	// within the bounds, After checked), before its first event: what
	// can fail has not, and every run from now on is seen. A server
	// sends its response header then.
	Ready func()
}

// Watch yields the session's live events as the turns producing them run,
// in this process or in another sharing the store (see Live turns in the
// package doc): the run in progress from its beginning (or after
// opt.After), and with opt.Follow every later run. Each event carries its
// id (Event.ID). A watcher never slows the turn: it reads the run's
// events at its own pace. The watch ends when ctx does, once it has
// yielded the events published before that; ctx's error is not yielded.
// An After beyond the session's transcript is ErrBadEventID; over the
// agent's bounds, ErrTooManyWatchers.
func (s *Session) Watch(ctx context.Context, opt WatchOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		h := s.a.live
		t, next, err := h.join(s.key)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer h.leave(s.key)
		if !opt.After.IsZero() {
			if t == nil || opt.After.Pos > t.pos {
				_, total, err := store.ReadTail(ctx, s.a.cfg.Store, s.key, 1)
				if err != nil {
					yield(Event{}, err)
					return
				}
				if opt.After.Pos > int64(total) {
					yield(Event{}, fmt.Errorf("%w: %s names no event of session %s", ErrBadEventID, opt.After, s.key))
					return
				}
			}
		}
		// A run this process has (running, or the one the watcher was
		// in) is followed here; otherwise another process may run the
		// session's turn, and the store's notifications carry it.
		local := t != nil && (h.running(s.key) == t || (!opt.After.IsZero() && opt.After.Pos <= t.pos))
		if !local && s.watchRelayed(ctx, opt, yield) {
			return
		}
		if !local {
			// No notifications: the transcript shows what other
			// processes run, step by step (and this process's runs
			// come live).
			st, open, err := s.storedStart(ctx, opt.After)
			if err != nil {
				yield(Event{}, err)
				return
			}
			if !open && !opt.Follow {
				if opt.Ready != nil {
					opt.Ready()
				}
				return
			}
			if !open {
				// From the end of what is stored: a session that its TTL
				// expired is empty to the runtime (openTurnStart says 0)
				// until its next turn deletes it, and its old entries are
				// no run to follow.
				_, total, err := store.ReadTail(ctx, s.a.cfg.Store, s.key, 1)
				if err != nil {
					yield(Event{}, err)
					return
				}
				st.from = int64(total)
			}
			if opt.Ready != nil {
				opt.Ready()
			}
			s.watchStored(ctx, st, opt.Follow, yield)
			return
		}
		if opt.Ready != nil {
			opt.Ready()
		}
		after := opt.After
		for first := true; ; first = false {
			if !first {
				t, next = h.current(s.key)
			}
			n := -1 // where to start in t; -1: nothing of t to yield
			switch {
			case t == nil || t.pos < after.Pos:
			case after.IsZero():
				// Without an id, the watch starts at the beginning of
				// the run that was running when it joined (local says
				// so; later rounds have an id), also when the run ended
				// since: Ready has told the watcher it sees that run.
				n = 0
			default:
				t, n = h.resume(t, after)
			}
			if n >= 0 {
				last, ok := s.follow(ctx, t, n, yield)
				if !ok || !opt.Follow {
					return
				}
				after = last
				continue
			}
			if !opt.Follow {
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				if !woken(next) {
					return
				}
			}
		}
	}
}

// resume returns the oldest run of t's chain (t, the session's newest, and
// the runs before it the hub keeps) with events after `after`, and how
// many of its events come before those; nil and -1 when none has.
func (h *liveHub) resume(t *liveTurn, after EventID) (*liveTurn, int) {
	var buf [keptRuns]*liveTurn
	for _, r := range slices.Backward(h.chain(buf[:0], t, after.Pos)) {
		if r.pos > after.Pos {
			return r, 0 // a run after the watcher's last event: all of it
		}
		if n := int(min(after.N, maxEvents)); !r.over(n) {
			return r, n
		}
	}
	return nil, -1
}

// before returns the events of the runs before t on its chain that begin
// at pos or later, oldest first, in one new slice.
func (h *liveHub) before(t *liveTurn, pos int64) []Event {
	var buf [keptRuns]*liveTurn
	runs := h.chain(buf[:0], t, pos)
	if len(runs) > 0 {
		runs = runs[1:] // t's own events are the caller's
	}
	var evs []Event
	for _, r := range slices.Backward(runs) {
		e, _, _ := r.since(0)
		evs = append(evs, e...)
	}
	return evs
}

// chain appends to runs t and the runs before it on its session's chain
// that begin at pos or later, newest first, and returns it. The chain is
// read under h.mu; the runs it names are read after, under their own.
func (h *liveHub) chain(runs []*liveTurn, t *liveTurn, pos int64) []*liveTurn {
	h.mu.Lock()
	defer h.mu.Unlock()
	for x := t; x != nil && x.pos >= pos && len(runs) < keptRuns; x = x.prev {
		runs = append(runs, x)
	}
	return runs
}

// maxEvents stands for "past every event of its run" in an EventID.
const maxEvents = 1 << 40

// follow yields t's events after the first n until the run ends. It
// returns the id of the last one it had and false when the watcher
// stopped or ctx ended.
func (s *Session) follow(ctx context.Context, t *liveTurn, n int, yield func(Event, error) bool) (EventID, bool) {
	last := EventID{Pos: t.pos, N: int64(n)}
	for final := false; ; {
		evs, done, wake := t.since(n)
		for _, ev := range evs {
			if !yield(ev, nil) {
				return last, false
			}
			n++
			last.N = int64(n)
		}
		if done {
			if t.over(n) {
				// Past every event of the run: the next run begins later.
				return EventID{Pos: t.pos, N: maxEvents}, true
			}
			continue
		}
		if final {
			return last, false
		}
		select {
		case <-wake:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if !woken(wake) {
				return last, false
			}
			// One pass more, for what was published before ctx ended;
			// a run that goes on publishing does not keep the watch.
			final = true
		}
	}
}

// woken reports whether ch is closed. A watcher whose context ends as
// its run publishes is woken by both, and select picks either: the
// events published before the end are still the watcher's, so that a
// server ending its followers once every turn has ended (Server.Close)
// still gives them those turns' last events.
func woken(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Watchers returns how many watchers follow the session in this process.
func (s *Session) Watchers() int {
	h := s.a.live
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.watchers[s.key]
}

// OpenTurn returns the turn that has begun on the session and not ended:
// one running in this process, or else the transcript's (running in
// another process, or left open by one that died).
func (s *Session) OpenTurn(ctx context.Context) (turnID string, ok bool, err error) {
	if id, ok := s.Running(); ok {
		return id, true, nil
	}
	err = s.with(ctx, reading, func(ctx context.Context, sl *slot) error {
		if sl.st.open != nil {
			turnID, ok = sl.st.open.id, true
		}
		return nil
	})
	return turnID, ok, err
}

// stopElsewhere stops the open turn of another process through the
// store's notifications, and waits until its end is recorded. A turn is
// running somewhere exactly when the transcript has it open and no
// approval waits on it (a paused turn runs nowhere: ErrNotRunning). A
// turn whose process does not answer a sync (it died) is closed here, as
// cancelled, once no process holds it (closeDead): Stop of a dead turn
// ends it too.
func (s *Session) stopElsewhere(ctx context.Context) (string, error) {
	turnID, open, err := s.OpenTurn(ctx)
	if err != nil {
		return "", err
	}
	start, running, err := s.openTurnStart(ctx)
	if err != nil {
		return "", err
	} else if !open || !running {
		return "", fmt.Errorf("%w (session %s)", ErrNotRunning, s.key)
	}
	if err := s.a.notify(ctx, s.key, relayMsg{T: "stop"}); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return "", fmt.Errorf("%w in this process (session %s; its store carries no notifications to the process running it)", ErrNotRunning, s.key)
		}
		return "", err
	}
	asked := time.Now()
	for {
		if id, still, err := s.OpenTurn(ctx); err != nil || !still || id != turnID {
			return turnID, err
		}
		if time.Since(asked) > syncWait {
			// Still open a while after the stop: is its process there?
			alive, err := s.answers(ctx, start)
			if err != nil {
				return turnID, err
			}
			if !alive {
				return turnID, s.closeDead(ctx, turnID)
			}
			// It is: the stop may have been lost on the way.
			if err := s.a.notify(ctx, s.key, relayMsg{T: "stop"}); err != nil {
				return turnID, err
			}
			asked = time.Now()
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return turnID, err
		}
	}
}
