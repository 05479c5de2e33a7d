package spool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// emitter passes a delegated agent's events into the calling turn's
// stream while a tool call runs. The tool may run on another goroutine;
// the turn's goroutine is blocked waiting for it meanwhile, so events are
// never yielded concurrently, and the turn closes the emitter as soon as
// the call returns (also on a timeout), so none are yielded after.
//
// The consumer's loop body runs on the tool's goroutine then: a panic of
// it is caught there, before the tool's own recovery (tool.Tool.Call)
// takes it for the tool's, and handed back by close, for the turn to
// raise on its own goroutine, where it goes on up to the consumer.
type emitter struct {
	mu       sync.Mutex
	r        *run
	callID   string
	done     bool
	panicked any // the consumer's panic, raised in its loop body
}

type emitterKey struct{}

// withEmitter gives a tool call's context the calling session's key and
// an emitter for delegated events. The caller closes the emitter when the
// call returns, even if a timed-out tool goes on running.
func withEmitter(ctx context.Context, r *run, callID string) (context.Context, *emitter) {
	em := &emitter{r: r, callID: callID}
	ctx = context.WithValue(ctx, callerKey{}, r.s.key)
	return context.WithValue(ctx, emitterKey{}, em), em
}

// emit passes a delegate's event to the calling turn's consumer and
// reports whether it wants more: false once the consumer stopped, or
// panicked, or the call returned.
func (e *emitter) emit(agent, sessionID string, ev Event) (more bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			e.panicked, e.done, more = p, true, false
		}
	}()
	return e.r.emit(Event{Kind: EventDelegate, Delegate: &DelegateEvent{Agent: agent, SessionID: sessionID, CallID: e.callID, Event: &ev}})
}

// close ends the emitter and returns the consumer's panic, if its loop
// body panicked on an event it passed.
func (e *emitter) close() (panicked any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done = true
	return e.panicked
}

type delegateArgs struct {
	Prompt string `json:"prompt" jsonschema:"what to ask the agent"`
}

// DelegateResult is what a delegating tool call returns to the calling
// model: the answer, and the session it came from, which links the
// caller's transcript to the delegate's.
type DelegateResult struct {
	Agent     string `json:"agent"`
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	Text      string `json:"text"`
	// Notice, with status ok, says why the provider stopped the
	// delegate's answer short (Result.Notice): the text is incomplete.
	Notice string `json:"notice,omitempty"`
}

// AsTool returns a tool through which another agent's model can delegate
// to a: the call's prompt is sent to a's session DelegateSessionID(the
// caller's session key), the same on each delegation from that caller
// session (so the delegate remembers) and a different one for every other
// caller session, of any agent or user. The delegate's events appear in
// the caller's stream as EventDelegate, and its result names the session,
// which links the caller's transcript to the delegate's.
// For a user-scoped a, the caller's user (ContextWithUser) carries over. The
// delegate's turn takes the store's lock on the delegate's session, as any
// turn does, so another process writing to that session meanwhile waits
// for the delegation to end.
//
// A delegate whose own tools need approval pauses; the caller's model is
// told so in an error result. Give delegates tool mode auto, or tools that
// need no approval.
func (a *Agent) AsTool(name, description string, opts ...tool.Option) *tool.Tool {
	return tool.New(name, description, func(ctx context.Context, args delegateArgs) (DelegateResult, error) {
		caller, _ := ctx.Value(callerKey{}).(store.Key)
		sess, err := a.Session(ctx, DelegateSessionID(caller))
		if err != nil {
			return DelegateResult{}, err
		}
		em, _ := ctx.Value(emitterKey{}).(*emitter)
		var res *Result
		for ev, err := range sess.Stream(ctx, args.Prompt) {
			if err != nil {
				return DelegateResult{}, fmt.Errorf("spool: delegate %s: %w", a.cfg.Name, err)
			}
			if em != nil && !em.emit(a.cfg.Name, sess.ID(), ev) {
				// The caller's consumer stopped (or panicked), or the
				// call timed out: the delegate's turn ends, cancelled.
				break
			}
			if ev.Kind == EventTurnEnd {
				res = ev.Result
			}
		}
		if res == nil {
			return DelegateResult{}, fmt.Errorf("spool: delegate %s: no result", a.cfg.Name)
		}
		out := DelegateResult{Agent: a.cfg.Name, SessionID: sess.ID(), Status: string(res.Status), Text: res.Text}
		if res.Status == transcript.StatusOK {
			out.Notice = res.Notice
		}
		if res.Status == StatusAwaitingApproval {
			ids := make([]string, len(res.Pending))
			for i, p := range res.Pending {
				ids[i] = p.ID
			}
			b, _ := json.Marshal(out)
			return DelegateResult{}, fmt.Errorf("spool: delegate %s is waiting for approval of %s: %s", a.cfg.Name, strings.Join(ids, ", "), b)
		}
		return out, nil
	}, opts...)
}

// callerKey carries the calling session's key into its tool calls.
type callerKey struct{}

// DelegateSessionID returns the id of the delegate session that serves the
// caller session k: "dlg_" and a hash of k's agent, owner and id, so that
// two callers never share a delegate session. A tool call with no caller
// (used outside a turn) delegates to DelegateSessionID(store.Key{}).
func DelegateSessionID(k store.Key) string {
	h := sha256.Sum256([]byte("spool delegate\x00" + k.Agent + "\x00" + k.Owner + "\x00" + k.ID))
	return "dlg_" + hex.EncodeToString(h[:16])
}
