package spool

import (
	"context"
	"fmt"
	"iter"

	"github.com/spool-go/spool/transcript"
)

// Decision answers a pending approval.
type Decision struct {
	Allow  bool
	Scope  transcript.ApprovalScope // once (default) or session: allow this tool for the rest of the session
	Reason string                   // recorded, and told to the model on a denial
}

// Approve allows the pending call approvalID, once or for the rest of the
// session (scope session: that tool then runs without asking, also after
// OpenSession), and resumes the turn: the call runs and the model
// continues. It works the same after a restart, with a new agent on the
// same store. The Result is like Send's.
func (s *Session) Approve(ctx context.Context, approvalID string, scope transcript.ApprovalScope) (*Result, error) {
	return Collect(s.Resolve(ctx, approvalID, Decision{Allow: true, Scope: scope}))
}

// Deny refuses the pending call approvalID and resumes the turn: the model
// is told the call was denied, with reason, and continues.
func (s *Session) Deny(ctx context.Context, approvalID, reason string) (*Result, error) {
	return Collect(s.Resolve(ctx, approvalID, Decision{Reason: reason}))
}

// Resolve answers the pending call approvalID with d and returns the
// resumed turn as events, like Stream. It fails with ErrNoApproval when no
// such approval is pending, and with store.ErrSessionExpired when the
// session expired while it waited.
func (s *Session) Resolve(ctx context.Context, approvalID string, d Decision) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if d.Scope == "" {
			d.Scope = transcript.ApprovalScopeOnce
		}
		if d.Scope != transcript.ApprovalScopeOnce && d.Scope != transcript.ApprovalScopeSession {
			yield(Event{}, fmt.Errorf("spool: unknown approval scope %q (once or session)", d.Scope))
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var r *run
		err := s.with(ctx, turning, func(ctx context.Context, sl *slot) error {
			p, ok := sl.st.pendingApproval(approvalID)
			if !ok {
				return fmt.Errorf("%w: approval %q of session %s", ErrNoApproval, approvalID, s.key)
			}
			r = s.newRun(sl, yield, cancel, p.TurnID)
			defer r.done()
			defer r.endIfConsumerPanicked(ctx)
			// r.wrote is set once the decision is recorded (decide): a
			// failure before leaves the turn paused as it was (another
			// process's decision got there first, or the store failed),
			// and one after ends it. Observers hear the turn start again
			// only then, as a new turn's start once its prompt is stored:
			// a start with no end would hold a span open for ever.
			r.emit(Event{Kind: EventTurnStart})
			return r.settle(ctx, r.resume(ctx, p, d))
		})
		if err == nil {
			s.afterTurn(ctx)
		}
		yieldError(yield, r, err)
	}
}

// resume records the decision d on p, settles the turn's other calls it
// decides, and continues the turn: it pauses again if calls of the turn
// still wait, and goes on with the model otherwise.
func (r *run) resume(ctx context.Context, p Approval, d Decision) error {
	if err := r.decide(ctx, p, d); err != nil {
		return err
	}
	if d.Allow && d.Scope == transcript.ApprovalScopeSession {
		// The tool is now approved for the session: its other calls
		// waiting in this turn need no one to ask.
		for _, other := range append([]Approval(nil), r.sl.st.pending...) {
			if other.TurnID == p.TurnID && other.Tool == p.Tool {
				if err := r.decide(ctx, other, Decision{Allow: true, Scope: transcript.ApprovalScopeSession, Reason: "approved for the session"}); err != nil {
					return err
				}
			}
		}
	}
	for _, other := range r.sl.st.pending {
		if other.TurnID == p.TurnID {
			return r.pause(ctx)
		}
	}
	return r.loop(ctx)
}

// decide records d for p, then runs the call or records its denial.
func (r *run) decide(ctx context.Context, p Approval, d Decision) error {
	dec := transcript.VerdictDeny
	if d.Allow {
		dec = transcript.VerdictAllow
	}
	if _, err := r.w.append(ctx, transcript.TypeApprovalDecision, p.TurnID, "", transcript.ApprovalDecision{
		ApprovalID: p.ID, CallID: p.CallID, Decision: dec, Scope: d.Scope, Reason: d.Reason,
	}); err != nil {
		r.maybeStored(p.TurnID, err)
		return err
	}
	if !r.wrote {
		r.wrote = true // the turn is under way again: a failure from here on ends it
		r.observe(ctx, Observation{Kind: ObserveTurnStart})
	}
	r.observe(ctx, Observation{Kind: ObserveApproval, Tool: p.Tool, CallID: p.CallID, Verdict: dec, ApprovalScope: d.Scope})
	call := transcript.ToolCall{ID: p.CallID, Name: p.Tool, Arguments: p.Arguments}
	if d.Allow && r.interrupted(ctx) != nil {
		return r.recordResult(ctx, notRun(p.CallID, p.Tool))
	}
	if d.Allow {
		return r.execute(ctx, call)
	}
	msg := "the user denied this call"
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	r.observe(ctx, Observation{Kind: ObserveToolStart, Tool: p.Tool, CallID: p.CallID})
	r.observe(ctx, Observation{Kind: ObserveToolEnd, Tool: p.Tool, CallID: p.CallID, Outcome: OutcomeDenied})
	return r.recordResult(ctx, transcript.ToolResult{CallID: p.CallID, Tool: p.Tool, Result: msg, IsError: true})
}
