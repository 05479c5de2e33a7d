package spool

import (
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/transcript"
)

// state is what the runtime knows of a session between calls, derived
// from its transcript: the head for conditional appends, the tool mode, the
// tools approved for the session, the approvals pending, and the turn that
// is open (started and not ended); and the history the next model request
// carries, kept up to date entry by entry (history.Builder), so that a turn
// costs the entries it adds rather than a rebuilt window.
type state struct {
	head         string
	count        int
	maxTurnID    string // the greatest turn id seen (newTurnID)
	lastActivity time.Time
	mode         transcript.ToolMode // "" until a session.mode entry says
	approved     map[string]bool     // tools approved for the rest of the session; nil for none
	pending      []Approval          // in request order
	requests     map[string]Approval // every approval request by id, for decisions; nil for none
	used         int64               // tokens of the session's ended turns and compactions
	// sinceCompaction counts the turns ended since the last compaction.
	sinceCompaction int
	open            *openTurn
	hist            *history.Builder // the history of what st has seen
}

// openTurn is a turn that has started and not ended: running, paused on
// approvals, or left unfinished by a process that stopped.
type openTurn struct {
	id      string
	started time.Time
	steps   int              // assistant messages so far
	usage   transcript.Usage // what its recorded steps used
}

func newState(opt history.Options) *state {
	return &state{hist: history.NewBuilder(opt)}
}

// newTurnID returns the turn id of a new entry of the session (a turn's,
// or a marker's, title's or notice's): one that sorts after every turn id
// the session has, even one another replica made with a clock ahead of
// this one's. The history's Builder tells new turns from old ones by their
// ids sorting so, and forgets the old ones only while they do
// (history.Builder.Forget).
func (st *state) newTurnID(now time.Time) string { return transcript.NewIDAfter(now, st.maxTurnID) }

// approve notes that tool is approved for the rest of the session.
func (st *state) approve(tool string) {
	if st.approved == nil {
		st.approved = map[string]bool{}
	}
	st.approved[tool] = true
}

// forgetAbove is the transcript length above which a state drops at once
// the entries its history cannot need (history.Builder.Forget), rather
// than at its first model request: a read-only call on a long session then
// caches about a window, not the transcript.
const forgetAbove = 2048

// loadState derives the state of a whole transcript.
func loadState(entries []transcript.Entry, opt history.Options) *state {
	st := newState(opt)
	for _, e := range entries {
		st.apply(e, nil)
	}
	if len(entries) > forgetAbove {
		st.hist.View()
		st.hist.Forget()
	}
	return st
}

// apply updates st for e, appended after everything st has seen. data,
// when not nil, is the value e's data was made from, which spares decoding
// it. Entries whose data does not decode are counted but otherwise ignored
// here; Read already refused anything corrupt.
func (st *state) apply(e transcript.Entry, data any) {
	st.hist.AddDecoded(e, data)
	st.head = e.ID
	st.maxTurnID = max(st.maxTurnID, e.TurnID)
	st.count++
	if e.Timestamp.After(st.lastActivity) {
		st.lastActivity = e.Timestamp
	}
	switch e.Type {
	case transcript.TypeUserMessage:
		if st.open == nil || st.open.id != e.TurnID {
			st.open = &openTurn{id: e.TurnID, started: e.Timestamp}
		}
	case transcript.TypeAssistantMessage:
		m, ok := data.(transcript.AssistantMessage)
		if !ok && e.DecodeData(&m) != nil {
			return
		}
		if t := st.turn(e); t != nil {
			t.steps++
			if m.Usage != nil {
				t.usage = t.usage.Add(*m.Usage)
			}
		}
	case transcript.TypeApprovalRequest:
		// Decoded, not taken from data: the arguments as stored are
		// compacted, and an approval reads the same in every process.
		var r transcript.ApprovalRequest
		if e.DecodeData(&r) == nil {
			a := Approval{ID: r.ApprovalID, CallID: r.CallID, Tool: r.Tool, Arguments: r.Arguments, TurnID: e.TurnID, Requested: e.Timestamp}
			if st.requests == nil {
				st.requests = map[string]Approval{}
			}
			st.requests[a.ID] = a
			st.pending = append(st.pending, a)
		}
	case transcript.TypeApprovalDecision:
		d, ok := data.(transcript.ApprovalDecision)
		if !ok && e.DecodeData(&d) != nil {
			return
		}
		for i, p := range st.pending {
			if p.ID == d.ApprovalID {
				st.pending = append(st.pending[:i:i], st.pending[i+1:]...)
				break
			}
		}
		if req, ok := st.requests[d.ApprovalID]; ok && d.Decision == transcript.VerdictAllow && d.Scope == transcript.ApprovalScopeSession {
			st.approve(req.Tool)
		}
	case transcript.TypeSessionMode:
		m, ok := data.(transcript.SessionMode)
		if (ok || e.DecodeData(&m) == nil) && m.ToolMode.Valid() {
			st.mode = m.ToolMode
		}
	case transcript.TypeFork:
		// A forked session starts with the mode and the grants of its
		// source's turn.
		f, ok := data.(transcript.Fork)
		if ok || e.DecodeData(&f) == nil {
			if f.ToolMode.Valid() {
				st.mode = f.ToolMode
			}
			for _, t := range f.ApprovedTools {
				st.approve(t)
			}
		}
	case transcript.TypeCompaction:
		st.sinceCompaction = 0
		c, ok := data.(transcript.Compaction)
		if (ok || e.DecodeData(&c) == nil) && c.Usage != nil {
			st.used += c.Usage.InputTokens + c.Usage.OutputTokens
		}
	case transcript.TypeTurnEnd:
		st.sinceCompaction++
		end, ok := data.(transcript.TurnEnd)
		if ok || e.DecodeData(&end) == nil {
			st.used += end.Usage.InputTokens + end.Usage.OutputTokens
		}
		if st.open != nil && st.open.id == e.TurnID {
			st.open = nil
		}
		// A turn's end settles its approvals: none of them can be answered.
		st.pending = dropTurn(st.pending, e.TurnID)
	}
}

// turn returns the open turn e belongs to, or nil.
func (st *state) turn(e transcript.Entry) *openTurn {
	if st.open != nil && st.open.id == e.TurnID {
		return st.open
	}
	return nil
}

func dropTurn(p []Approval, turnID string) []Approval {
	out := p[:0:0]
	for _, a := range p {
		if a.TurnID != turnID {
			out = append(out, a)
		}
	}
	return out
}

// pendingApproval returns the pending approval with id.
func (st *state) pendingApproval(id string) (Approval, bool) {
	for _, p := range st.pending {
		if p.ID == id {
			return p, true
		}
	}
	return Approval{}, false
}
