package spool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/spool-go/spool/tool"
)

// emitter passes a delegated agent's events into the calling turn's
// stream while a tool call runs. The tool may run on another goroutine;
// the turn's goroutine is blocked waiting for it meanwhile, so events are
// never yielded concurrently, and none after the call has returned.
type emitter struct {
	mu     sync.Mutex
	r      *run
	callID string
	done   bool
}

type emitterKey struct{}

// withEmitter gives a tool call's context the calling session's id and
// an emitter for delegated events.
func withEmitter(ctx context.Context, r *run, callID string) context.Context {
	ctx = context.WithValue(ctx, callerKey{}, r.s.key.ID)
	return context.WithValue(ctx, emitterKey{}, &emitter{r: r, callID: callID})
}

func (e *emitter) emit(agent, sessionID string, ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return
	}
	e.r.emit(Event{Kind: EventDelegate, Delegate: &DelegateEvent{Agent: agent, SessionID: sessionID, CallID: e.callID, Event: &ev}})
}

func (e *emitter) close() {
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
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
}

// AsTool returns a tool through which another agent's model can delegate
// to a: the call's prompt is sent to a's session with the same id as the
// caller's session (a different session, since the agent name is part of
// the key, and the same one on each delegation from that caller session,
// so the delegate remembers). The delegate's events appear in the
// caller's stream as EventDelegate, and its result names the session.
// For a user-scoped a, the caller's user (WithUser) carries over. The
// delegate's turn does not take the store's lock across processes: the
// caller's turn holds the lock of the caller's session, which already
// orders every delegation from it.
//
// A delegate whose own tools need approval pauses; the caller's model is
// told so in an error result. Give delegates tool mode auto, or tools that
// need no approval.
func (a *Agent) AsTool(name, description string, opts ...tool.Option) *tool.Tool {
	return tool.New(name, description, func(ctx context.Context, args delegateArgs) (DelegateResult, error) {
		caller, ok := ctx.Value(callerKey{}).(string)
		if !ok || caller == "" {
			caller = "default"
		}
		sess, err := a.Session(ctx, caller)
		if err != nil {
			return DelegateResult{}, err
		}
		ctx = context.WithValue(ctx, delegatedKey{}, true)
		em, _ := ctx.Value(emitterKey{}).(*emitter)
		if em != nil {
			defer em.close()
		}
		var res *Result
		for ev, err := range sess.Stream(ctx, args.Prompt) {
			if err != nil {
				return DelegateResult{}, fmt.Errorf("delegate %s: %w", a.cfg.Name, err)
			}
			if em != nil {
				em.emit(a.cfg.Name, sess.ID(), ev)
			}
			if ev.Kind == EventTurnEnd {
				res = ev.Result
			}
		}
		if res == nil {
			return DelegateResult{}, fmt.Errorf("delegate %s: no result", a.cfg.Name)
		}
		out := DelegateResult{Agent: a.cfg.Name, SessionID: sess.ID(), Status: string(res.Status), Text: res.Text}
		if res.Status == StatusAwaitingApproval {
			ids := make([]string, len(res.Pending))
			for i, p := range res.Pending {
				ids[i] = p.ID
			}
			b, _ := json.Marshal(out)
			return DelegateResult{}, fmt.Errorf("delegate %s is waiting for approval of %s: %s", a.cfg.Name, strings.Join(ids, ", "), b)
		}
		return out, nil
	}, opts...)
}

// callerKey carries the calling session's id into its tool calls.
type callerKey struct{}
