package history

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// A unit is what the window takes or leaves as a whole: one kept turn (the
// anchor) with the questions merged into its first user message (rule 5).
// Those are the trailing user messages of the kept turn before it, and all
// of any kept turns in between that send nothing but user messages (a
// response_blocked turn, typically). Merging before the window is chosen
// makes each unit's message count and tokens exact and additive.
//
// The newest kept turn is always an anchor; any other kept turn is one
// unless it sends only user messages.
//
// A unit's messages depend on its anchor, the anchor before it, the turns
// in between, and on whether it is the newest; the anchor keeps them with
// what they were made from, and they are made again only when one of those
// changed (turn.changed) since.
type unit struct {
	ok     bool
	prev   int    // the anchor before it when rendered
	newest bool   // whether it was the newest when rendered
	stamp  uint64 // the tick it was rendered at
	gen    uint64 // which rendering it is: one more each time it is rendered (view)
	msgs   []model.Message
	tokens int // of msgs, when the options have a budget
}

// unitOf returns, for the anchor k, the anchor of the unit before it (or
// -1) and whether the unit holds a turn waiting on an approval.
func (b *Builder) unitOf(k int) (prev int, waiting bool) {
	// A summary is ended, whatever the turn it is anchored at (one with
	// no message) holds.
	waiting = b.turns[k].waiting && !b.isSummary(k)
	prev = b.prevKept(k)
	for prev >= 0 && b.onlyUserAt(prev) {
		waiting = waiting || b.turns[prev].waiting
		prev = b.prevKept(prev)
	}
	return prev, waiting
}

// render returns the unit anchored at k, whose previous anchor is prev,
// rendering it unless what it holds is unchanged.
func (b *Builder) render(k, prev int) *unit {
	u := b.turns[k].unit
	if u == nil {
		u = &unit{}
		b.turns[k].unit = u
	}
	newest := k == b.newest
	if b.isSummary(k) {
		return b.renderSummary(u, k, prev, newest)
	}
	if u.ok && u.prev == prev && u.newest == newest && !b.changedSince(max(prev, 0), k, u.stamp) {
		return u
	}
	r := renderer{b: b, acc: u.msgs[:0]}
	r.merged(prev, k)
	t := &b.turns[k]
	switch {
	case b.onlyUser(t):
		r.users(k, -1)
	case newest:
		r.turn(k, int32(len(b.entries)))
	default:
		r.turn(k, t.lastAsst) // its trailing questions open the next unit
	}
	return b.finish(u, prev, newest, r.acc)
}

// finish keeps msgs as unit u's rendering and counts its tokens.
func (b *Builder) finish(u *unit, prev int, newest bool, msgs []model.Message) *unit {
	*u = unit{ok: true, prev: prev, newest: newest, stamp: b.tick, gen: u.gen + 1, msgs: msgs}
	if b.opt.Budget > 0 {
		for i := range u.msgs {
			u.tokens += b.opt.count(u.msgs[i])
		}
	}
	return u
}

// changedSince reports whether a turn in [from, to] changed after tick.
func (b *Builder) changedSince(from, to int, tick uint64) bool {
	for m := from; m <= to; m++ {
		if b.turns[m].changed > tick {
			return true
		}
	}
	return false
}

// renderer appends the messages of one unit to acc.
type renderer struct {
	b   *Builder
	acc []model.Message
}

type toolResult struct {
	callID, tool, content string
	used                  bool
}

type denial struct {
	callID, reason string
}

// merged appends the questions that open the unit after anchor prev, up
// to turn until: the trailing user messages of prev, and every kept turn
// in between (each sends only user messages). Rule 5 merges them.
func (r *renderer) merged(prev, until int) {
	b := r.b
	if prev >= 0 && b.endsWithUserAt(prev) {
		r.users(prev, b.turns[prev].lastAsst)
	}
	for m := prev + 1; m < until; m++ {
		if b.turns[m].kept {
			r.users(m, -1)
		}
	}
}

// users appends the user messages of turn k that come after position from.
func (r *renderer) users(k int, from int32) {
	b := r.b
	for i := range b.positions(k) {
		if i > int(from) && b.entries[i].Type == transcript.TypeUserMessage {
			r.user(b.part(i).text)
		}
	}
}

// user appends a user message, merged into the previous one when that is a
// user message of the same unit (rule 5).
func (r *renderer) user(text string) {
	if n := len(r.acc); n > 0 && r.acc[n-1].Role == model.RoleUser {
		r.acc[n-1].Content += "\n\n" + text
		return
	}
	r.acc = append(r.acc, model.Message{Role: model.RoleUser, Content: text})
}

// turn appends the messages of an ok or open turn (rule 4), leaving out its
// user messages after position until.
func (r *renderer) turn(k int, until int32) {
	b := r.b
	results, denials := b.results[:0], b.denials[:0]
	// The approval requests of calls without an id, each paired with the
	// first such call of its tool, in the assistant message before it,
	// not yet asked for (the agent asks in the order of the calls); and
	// the call of the decision recorded last, until a result. The agent
	// records a decision's result (the call's run or its denial) right
	// after it: such a result answers that call, whatever the order the
	// calls were decided in.
	var (
		asked   []askedCall
		asst    = -1
		decided = -1 // in asked
		// Of the open turn's newest step (the assistant message at asst):
		// whether a decision came after it, and the calls that may still
		// run (allowed, their result not yet recorded) or wait on a person
		// (asked, not decided), by approval id and then by the id sent.
		settled  bool
		pending  map[string]string
		mayStill map[string]bool
	)
	for i := range b.positions(k) {
		switch b.entries[i].Type {
		case transcript.TypeAssistantMessage:
			asst = i
			settled = false
			clear(pending)
			clear(mayStill)
		case transcript.TypeApprovalRequest:
			p := b.part(i)
			if p.hasApproval && p.callID == "" && asst >= 0 {
				asked = askFor(asked, p, asst, b.entries[asst].ID, b.part(asst).calls)
				if n := len(asked); n > 0 && asked[n-1].approval == p.approvalID {
					pending = put(pending, p.approvalID, asked[n-1].id)
				}
			} else if p.hasApproval {
				pending = put(pending, p.approvalID, p.callID)
			}
		case transcript.TypeToolResult:
			p := b.part(i)
			r := toolResult{callID: p.callID, tool: p.tool, content: p.text}
			if a := decided; p.callID == "" && a >= 0 && (p.tool == "" || p.tool == asked[a].tool) {
				r.callID = asked[a].id
			}
			decided = -1
			results = append(results, r)
		case transcript.TypeApprovalDecision:
			p := b.part(i)
			decided = -1
			if p.hasApproval {
				for a := range asked {
					if asked[a].approval == p.approvalID {
						decided = a
						break
					}
				}
			}
			settled = true
			if id, ok := pending[p.approvalID]; ok && p.hasApproval {
				delete(pending, p.approvalID)
				if !p.deny {
					mayStill = put(mayStill, id, true) // allowed: it runs now
				}
			}
			if p.deny {
				d := denial{callID: p.callID, reason: p.reason}
				if d.callID == "" && decided >= 0 {
					d.callID = asked[decided].id
				}
				denials = append(denials, d)
			}
		}
	}
	for _, id := range pending {
		mayStill = put(mayStill, id, true) // waits on a person
	}
	ended := b.turns[k].ended()
	for i := range b.positions(k) {
		switch b.entries[i].Type {
		case transcript.TypeUserMessage:
			if i <= int(until) {
				r.user(b.part(i).text)
			}
		case transcript.TypeAssistantMessage:
			p := b.part(i)
			calls := namedCalls(b.entries[i].ID, p.calls)
			r.acc = append(r.acc, model.Message{Role: model.RoleAssistant, Content: p.text, ToolCalls: calls})
			for j, c := range p.calls {
				// A call of an open turn is left without a result only
				// while it may still run or wait: in the newest step,
				// before any decision (the step's calls are under way)
				// or waiting on its own, or allowed and running. A call
				// the turn went on past (a crash cut it while another
				// waited on a person, who then decided) is answered as
				// in an ended turn: the next request would otherwise
				// carry a call without its result, which providers refuse.
				open := !ended && i == asst && (!settled || mayStill[calls[j].ID])
				if content, ok := resultOf(results, denials, c, calls[j].ID, !open); ok {
					r.acc = append(r.acc, model.Message{Role: model.RoleTool, Content: content, ToolCallID: calls[j].ID})
				}
			}
		}
	}
	b.results, b.denials = results[:0], denials[:0]
}

// put sets m[k] to v, making m first if it is nil: most turns have no
// approval, and a render makes no map for them.
func put[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// namedCalls returns calls, the calls of assistant message entry id, with
// an id for each call recorded without one: "call_" and 16 hex digits of
// the SHA-256 of the entry's id, a NUL and the call's place among them,
// the same at every request. Providers refuse a call or a tool message
// without an id, and some take only letters, digits, '_' and '-' in one
// (an entry's id may hold any character). calls is not written to: it
// is the entry's, cached.
func namedCalls(id string, calls []transcript.ToolCall) []transcript.ToolCall {
	var out []transcript.ToolCall
	for j, c := range calls {
		if c.ID != "" {
			continue
		}
		if out == nil {
			out = slices.Clone(calls)
		}
		out[j].ID = CallID(id, j)
	}
	if out == nil {
		return calls
	}
	return out
}

// CallID is the id the history sends for the call at index among the
// calls of assistant message entryID when the call was recorded without
// one: "call_" and 16 hex digits of the SHA-256 of entryID, a NUL and
// index (see the package doc). Other views of a transcript name such a
// call with it too, so that it is one call everywhere.
func CallID(entryID string, index int) string {
	sum := sha256.Sum256([]byte(entryID + "\x00" + strconv.Itoa(index)))
	return "call_" + hex.EncodeToString(sum[:8])
}

// askedCall is an approval request of a call without an id: the call's
// tool, and the id the history sends it with.
type askedCall struct {
	approval, tool, id string
	msg, index         int // the call's assistant message (its position) and place
}

// askFor pairs approval request p with the first call without an id of
// its tool among calls, those of the assistant message at position msg
// (entry id entryID), that no request in asked has, and returns asked
// with it; asked unchanged when there is none.
func askFor(asked []askedCall, p *part, msg int, entryID string, calls []transcript.ToolCall) []askedCall {
next:
	for j, c := range calls {
		if c.ID != "" || c.Name != p.tool {
			continue
		}
		for _, a := range asked {
			if a.msg == msg && a.index == j {
				continue next
			}
		}
		return append(asked, askedCall{approval: p.approvalID, tool: p.tool, id: CallID(entryID, j), msg: msg, index: j})
	}
	return asked
}

// resultOf returns what the tool message answering call c says, and false
// when the call has no answer yet (it runs, or waits on a person). A call
// without an id is answered by the first result without a callId that
// names its tool (or no tool): the calls of a message that need no
// approval run at once, and those that wait on one are answered later, so
// results are not in the order of their calls; a result that follows
// the decision on the call's approval (named: the id it is sent with, see
// turn) answers it first.
func resultOf(results []toolResult, denials []denial, c transcript.ToolCall, named string, ended bool) (string, bool) {
	id := c.ID
	if id == "" {
		// A result that follows the decision on the call's approval.
		for i := range results {
			if r := &results[i]; !r.used && r.callID == named {
				r.used = true
				return r.content, true
			}
		}
	}
	for i := range results {
		if r := &results[i]; !r.used && r.callID == id && (id != "" || r.tool == "" || r.tool == c.Name) {
			r.used = true
			return r.content, true
		}
	}
	for _, d := range denials {
		if d.callID == id || (id == "" && d.callID == named) {
			if d.reason == "" {
				return "error: the user denied this call", true
			}
			return "error: the user denied this call: " + d.reason, true
		}
	}
	if ended {
		return "error: no result was recorded for this call", true
	}
	return "", false
}
