package spool

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

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
	// supersedes are the turns its regenerate's or edit's marker took
	// off the branch, for the Result of its first run's end or pause
	// (Result.Supersedes), as the live run has them.
	supersedes []string
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
	if e.Type == transcript.TypeBranch {
		// A regenerate's or an edit's marker is the first entry of the
		// turn that replaces the turns it names; a switch's begins none.
		var b transcript.Branch
		if e.TurnID != "" && e.DecodeData(&b) == nil && (b.Kind == transcript.BranchRegenerate || b.Kind == transcript.BranchEdit) {
			turns[e.TurnID] = &storedTurn{calls: map[string]bool{}, supersedes: b.Supersedes}
		}
		return nil
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
		res := &Result{SessionID: s.key.ID, TurnID: e.TurnID, Status: e.Status, Usage: end.Usage, Error: end.Error, DurationMs: end.DurationMs, Model: s.a.modelName, Notice: t.notice.Message, NoticeKind: t.notice.Kind,
			Supersedes: t.supersedes}
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
			Usage: t.usage, Model: s.a.modelName, Pending: slices.Clone(t.pending), Supersedes: t.supersedes}
		t.texts, t.supersedes = nil, nil // a run an approval resumes replaces nothing
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

// answers reports whether a process runs the session's turn whose runs
// begin at from or later: whether a sync is answered within syncWait by
// such a run still open, or by none that ended. A process that keeps a
// run of an earlier turn (ended within RecentTurn, no run of its own
// begun since) answers every sync too, with that run closed: its answer
// says nothing of the turn asked about, and the open run's may come
// after it.
func (s *Session) answers(ctx context.Context, from int64) (bool, error) {
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
			if json.Unmarshal(b, &m) == nil && m.T == "snap" && m.Nonce == nonce && (m.Open || m.Pos >= from) {
				return m.Open, nil
			}
		}
	}
}
