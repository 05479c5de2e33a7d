// Package transcriptgen writes random transcripts the way the runtime
// writes them, for property tests of what is built from them: turns one
// after another, each a question, assistant steps with tool calls, their
// results, approvals asked for and decided, and an end with any status
// (ok, error, cancelled in the middle of a step's calls, prompt_blocked,
// response_blocked); regenerates and edits; compactions where a caller
// plans them. It is test support: no code of the module imports it.
//
// The texts are what a real session can hold, not only what is tidy: an
// answer that is empty or only white space, a tool result that is empty,
// calls recorded without an id (a transcript another program wrote).
package transcriptgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/spool-go/spool/transcript"
)

// Config says what Session writes.
type Config struct {
	// Turns is how many turns (questions asked) the session has.
	Turns int
	// Compact, when not nil, is asked after some ended turns for a
	// compaction of the transcript so far, as the runtime plans one;
	// false writes none. The generator cannot plan one itself: package
	// history plans them, and history's own tests use this package.
	Compact func(entries []transcript.Entry) (transcript.Compaction, bool)
}

// Session returns a random transcript written the way the runtime
// writes one, and calls request, when it is not nil, with the transcript
// as it is at each point where the runtime asks the model for a step:
// after a turn's question, and after every call of a step has its
// result or its denial. The slice given to request is only valid during
// the call. The last turn may be left waiting on an approval.
func Session(r *rand.Rand, cfg Config, request func(entries []transcript.Entry)) []transcript.Entry {
	g := &gen{r: r, request: request}
	for i := range cfg.Turns {
		last := i == cfg.Turns-1
		var waiting bool
		switch x := r.IntN(20); {
		case x < 2 && len(g.active) > 0 && g.ended[g.active[len(g.active)-1]]:
			// A regenerate: the newest turn is answered again.
			old := g.active[len(g.active)-1]
			tid := g.turnID()
			g.add(tid, transcript.TypeBranch, "", transcript.Branch{Kind: transcript.BranchRegenerate,
				Supersedes: []string{old}, Alternatives: []string{old, tid}})
			g.active = g.active[:len(g.active)-1]
			waiting = g.turn(tid, g.questions[old], last)
		case x < 4 && len(g.active) > 0:
			// An edit: an earlier question asked differently; it and every
			// later turn of the branch leave it.
			k := r.IntN(len(g.active))
			tid := g.turnID()
			g.add(tid, transcript.TypeBranch, "", transcript.Branch{Kind: transcript.BranchEdit,
				Supersedes: append([]string(nil), g.active[k:]...), Alternatives: []string{g.active[k], tid}})
			g.active = g.active[:k]
			waiting = g.turn(tid, fmt.Sprintf("edited question %d", len(g.entries)), last)
		default:
			waiting = g.turn(g.turnID(), fmt.Sprintf("question %d", len(g.entries)), last)
		}
		if waiting {
			break
		}
		if cfg.Compact != nil && r.IntN(4) == 0 {
			if c, ok := cfg.Compact(g.entries); ok {
				g.add(g.turnID(), transcript.TypeCompaction, "", c)
			}
		}
	}
	return g.entries
}

type gen struct {
	r         *rand.Rand
	request   func([]transcript.Entry)
	entries   []transcript.Entry
	ids       int
	active    []string // the turns of the active branch, oldest first
	questions map[string]string
	ended     map[string]bool
}

func (g *gen) turnID() string {
	g.ids++
	return fmt.Sprintf("T%04d", g.ids)
}

func (g *gen) add(turn string, typ transcript.Type, status transcript.Status, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	e := transcript.Entry{ID: fmt.Sprintf("E%05d", len(g.entries)), TurnID: turn, Type: typ, Status: status, Data: raw}
	if n := len(g.entries); n > 0 {
		e.ParentID = g.entries[n-1].ID
	}
	g.entries = append(g.entries, e)
}

func (g *gen) ask() {
	if g.request != nil {
		g.request(g.entries)
	}
}

// text returns an answer's text: mostly words, now and then nothing or
// only white space (a model may answer so, or only call tools).
func (g *gen) text() string {
	switch g.r.IntN(10) {
	case 0:
		return ""
	case 1:
		return []string{"\n", " ", "\n\n"}[g.r.IntN(3)]
	}
	return fmt.Sprintf("answer %d", len(g.entries))
}

// turn writes turn tid, asking question; it reports whether the turn was
// left waiting on an approval, which only the last turn may be.
func (g *gen) turn(tid, question string, last bool) (waiting bool) {
	if g.questions == nil {
		g.questions, g.ended = map[string]string{}, map[string]bool{}
	}
	g.questions[tid] = question
	g.active = append(g.active, tid)
	end := func(s transcript.Status) {
		g.add(tid, transcript.TypeTurnEnd, s, transcript.TurnEnd{})
		g.ended[tid] = true
	}
	g.add(tid, transcript.TypeUserMessage, "", transcript.UserMessage{Text: question})
	if g.r.IntN(12) == 0 {
		g.add(tid, transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: "prompt_refused", Message: "no"})
		end(transcript.StatusPromptBlocked)
		return false
	}
	for step := 0; ; step++ {
		g.ask()
		switch x := g.r.IntN(30); {
		case x < 2:
			end(transcript.StatusError) // the model call failed
			return false
		case x < 3:
			end(transcript.StatusCancelled) // stopped before an answer
			return false
		case x < 5:
			if g.r.IntN(2) == 0 {
				g.add(tid, transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: g.text()})
			}
			g.add(tid, transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: "response_stopped", Message: "no"})
			end(transcript.StatusResponseBlocked)
			return false
		}
		a := transcript.AssistantMessage{Text: g.text(), Model: "m"}
		if step < 3 && g.r.IntN(2) == 0 {
			noIDs := g.r.IntN(10) == 0 // another program's transcript
			for range 1 + g.r.IntN(3) {
				c := transcript.ToolCall{Name: []string{"lookup", "refund"}[g.r.IntN(2)], Arguments: json.RawMessage(`{"n":1}`)}
				if !noIDs {
					c.ID = fmt.Sprintf("call_%d_%d", len(g.entries), len(a.ToolCalls))
				}
				a.ToolCalls = append(a.ToolCalls, c)
			}
		}
		g.add(tid, transcript.TypeAssistantMessage, "", a)
		if len(a.ToolCalls) == 0 {
			end(transcript.StatusOK)
			return false
		}
		// The calls run in order, those that need a person ask; a stop
		// (or a crash) may come in the middle of them.
		stopAt := -1
		if g.r.IntN(8) == 0 {
			stopAt = g.r.IntN(len(a.ToolCalls) + 1)
		}
		var asked []transcript.ToolCall
		for i, c := range a.ToolCalls {
			if i == stopAt {
				break
			}
			if c.ID != "" && g.r.IntN(3) == 0 {
				g.add(tid, transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{
					ApprovalID: "apr_" + c.ID, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments})
				asked = append(asked, c)
				continue
			}
			g.result(tid, c)
		}
		if stopAt >= 0 {
			switch {
			case g.r.IntN(2) == 0:
				// Stopped: the calls waiting are settled as not run.
				for _, c := range asked {
					g.decide(tid, c, false, "the turn was stopped")
				}
				end(transcript.StatusCancelled)
				return false
			case len(asked) == 0:
				return false // the process died: the turn has no end
			}
			// The process died with calls waiting on a person: after a
			// restart they are decided, and the turn goes on, without
			// the results of the calls the crash cut.
		}
		if len(asked) > 0 {
			switch x := g.r.IntN(8); {
			case x == 0 && last:
				return true // left waiting on a person
			case x == 1:
				// Stopped while waiting.
				for _, c := range asked {
					g.decide(tid, c, false, "the turn was stopped")
				}
				end(transcript.StatusCancelled)
				return false
			}
			for _, c := range asked {
				if g.r.IntN(3) == 0 {
					g.decide(tid, c, false, []string{"", "not now"}[g.r.IntN(2)])
				} else {
					g.decide(tid, c, true, "")
				}
			}
		}
	}
}

// result records call c's result: now and then empty, or a failure.
func (g *gen) result(tid string, c transcript.ToolCall) {
	res := transcript.ToolResult{CallID: c.ID, Tool: c.Name, Result: fmt.Sprintf("result %d", len(g.entries))}
	switch g.r.IntN(10) {
	case 0:
		res.Result = ""
	case 1:
		res.IsError = true
	}
	g.add(tid, transcript.TypeToolResult, "", res)
}

// decide records a decision on call c's approval and what follows it: the
// call's result when allowed, and, for a denial, a result saying so or
// (as a transcript another program wrote may have it) none.
func (g *gen) decide(tid string, c transcript.ToolCall, allow bool, reason string) {
	d := transcript.ApprovalDecision{ApprovalID: "apr_" + c.ID, CallID: c.ID, Decision: transcript.VerdictDeny,
		Scope: transcript.ApprovalScopeOnce, Reason: reason}
	if allow {
		d.Decision, d.Reason = transcript.VerdictAllow, ""
	}
	g.add(tid, transcript.TypeApprovalDecision, "", d)
	switch {
	case allow:
		g.result(tid, c)
	case g.r.IntN(2) == 0:
		msg := "the user denied this call"
		if reason != "" {
			msg += ": " + reason
		}
		g.add(tid, transcript.TypeToolResult, "", transcript.ToolResult{CallID: c.ID, Tool: c.Name, Result: msg, IsError: true})
	}
}
