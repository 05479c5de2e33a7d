package spool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// run is one call's part of a turn: from a prompt (begin) or from an
// approval decision (resume) until the turn ends or pauses again. It runs
// on the consumer's goroutine, inside the Stream iterator, so the model is
// read exactly as fast as the consumer takes events.
type run struct {
	s       *Session
	sl      *slot
	w       writer
	yield   func(Event, error) bool
	cancel  context.CancelFunc
	turnID  string
	started time.Time
	usage   transcript.Usage
	texts   []string
	prior   transcript.Usage // what the turn used before this call (a resumed turn)
	stopped bool             // the consumer stopped taking events
	// yielding: an event is with the consumer (its loop body runs)
	yielding bool
	wrote    bool               // something of this call is in the transcript
	ended    bool               // the turn's end, or its pause, is recorded
	marker   *transcript.Branch // what a regenerate or an edit writes before the prompt
	clientID string             // the client's id for the prompt (ContextWithClientMessageID)
	// held is the last step's answer when the turn ends with it: it is
	// appended with the turn's end, in one durable write, rather than
	// synced on its own just before it.
	held []item
	stop model.StopReason // why the provider stopped the last step's answer, if it did
	live *liveTurn        // the run as watchers see it
	// text and out gather a step's answer as the model streams it
	// (stream).
	text strings.Builder
	out  streamed
}

func (s *Session) newRun(sl *slot, yield func(Event, error) bool, cancel context.CancelFunc, turnID string) *run {
	r := &run{s: s, sl: sl, w: s.writer(sl), yield: yield, cancel: cancel, turnID: turnID, started: time.Now()}
	var old *liveTurn
	r.live, old = s.a.live.begin(s.key, turnID, int64(sl.st.count), cancel)
	s.a.relay(r.live)
	if old != nil {
		old.retire()
	}
	if t := sl.st.open; t != nil && t.id == turnID {
		r.prior = t.usage
	}
	return r
}

// done ends the run for its watchers.
func (r *run) done() { r.s.a.live.finish(r.live, r.wrote && !r.ended) }

// endIfConsumerPanicked, deferred by the call that runs r, records the
// turn's end, cancelled, when the consumer's loop body panicked (the
// panic, left to go on up to the consumer, passes through here: see
// emit), as a consumer that stops early leaves its turn. Otherwise the
// turn would stay open in the transcript until the session's next call,
// which on a store without a lock waits for it as for another process's
// turn (ErrBusy), for StaleTurn. Nothing more is yielded to a loop body
// that panicked.
func (r *run) endIfConsumerPanicked(ctx context.Context) {
	if !r.yielding || !r.wrote || r.ended {
		return
	}
	r.stopped = true
	if r.sl.st == nil || r.endStopped(ctx, context.Canceled) != nil {
		r.sl.abandoned = r.turnID // the next call closes it at once
		r.observeAbandoned(ctx)
	}
}

// turnUsage is what the whole turn has used: before this call and in it.
func (r *run) turnUsage() transcript.Usage { return r.prior.Add(r.usage) }

// settle deals with err, the failure of a call that may have written part
// of a turn: a store that failed after the turn began leaves the turn
// open, so its end is recorded now if the store allows, as an error, and
// the session remembers it otherwise, so that its next call closes it at
// once. It returns nil when the turn's end was recorded (and emitted).
func (r *run) settle(ctx context.Context, err error) error {
	if err == nil || !r.wrote || r.ended {
		return err
	}
	r.sl.abandoned = r.turnID
	if r.sl.st == nil {
		if serr := r.s.sync(ctx, r.sl); serr != nil {
			r.sl.st = nil
			r.observeAbandoned(ctx)
			return err
		}
	}
	if t := r.sl.st.open; t == nil || t.id != r.turnID {
		r.observeAbandoned(ctx)
		return err
	}
	if eerr := r.end(ctx, transcript.StatusError, "", "", asStoreError(err)); eerr != nil {
		r.observeAbandoned(ctx)
		return err
	}
	r.sl.abandoned = ""
	return nil
}

func (r *run) observeAbandoned(ctx context.Context) {
	r.observe(ctx, Observation{Kind: ObserveTurnEnd, Status: transcript.StatusError, Usage: r.turnUsage(),
		Duration: time.Since(r.started), ErrorCode: transcript.CodeStoreError})
}

// storeError is a store failure during a turn: the one representation of
// it in the runtime. A step that fails to read history or record its
// answer returns one, so that the turn loop leaves the turn to settle; the
// turn's end records it as transcript.CodeStoreError.
type storeError struct{ err error }

func (e *storeError) Error() string { return "the store failed: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// asStoreError returns err as a *storeError, wrapping it when it is not
// one yet.
func asStoreError(err error) error {
	if _, ok := errors.AsType[*storeError](err); ok {
		return err
	}
	return &storeError{err}
}

// emit passes ev to the consumer and reports whether it wants more. Once it
// does not, the run's context is cancelled and nothing more is emitted.
func (r *run) emit(ev Event) bool {
	ev.TurnID = r.turnID
	// Watchers get every event, also after the consumer stopped (its
	// turn's end, recorded cancelled, above all).
	var endPos int64
	if ev.Kind == EventTurnEnd && r.sl.st != nil {
		endPos = int64(r.sl.st.count) // what the run wrote is recorded
	}
	r.live.add(&ev, endPos)
	if r.stopped {
		return false
	}
	r.yielding = true // left set by a panic of the consumer's: see stream
	more := r.yield(ev, nil)
	r.yielding = false
	if !more {
		r.stopped = true
		r.cancel()
		return false
	}
	return true
}

func (r *run) observe(ctx context.Context, o Observation) {
	a := r.s.a
	o.Time = a.now()
	o.Agent = a.cfg.Name
	o.SessionID = r.s.key.ID
	o.TurnID = r.turnID
	a.obs.emit(ctx, o)
}

// maybeStored is what follows an append of turn turnID's opening (its
// prompt, or a decision that resumes it) that failed otherwise than by a
// conflict: the store may have stored it all the same (the connection
// broke after the commit, the reply was lost). Should the turn be in the
// transcript, the next call closes it at once, as any turn of this
// process that could not end, rather than wait StaleTurn for it as for
// another process's.
func (r *run) maybeStored(turnID string, err error) {
	if !errors.Is(err, store.ErrConflict) {
		r.sl.abandoned = turnID
	}
}

// begin starts a turn with prompt. A turn that replaces others begins with
// its marker, written with the prompt in one durable write: the two are
// never apart in the transcript.
func (r *run) begin(ctx context.Context, prompt string) error {
	items := []item{{transcript.TypeUserMessage, r.turnID, "", transcript.UserMessage{Text: prompt, ClientID: r.clientID}}}
	if r.marker != nil {
		items = append([]item{{transcript.TypeBranch, r.turnID, "", *r.marker}}, items...)
	}
	if _, err := r.w.appendAll(ctx, items); err != nil {
		r.maybeStored(r.turnID, err)
		return err
	}
	r.wrote = true
	r.observe(ctx, Observation{Kind: ObserveTurnStart})
	r.emit(Event{Kind: EventTurnStart})
	for _, g := range r.s.a.cfg.PromptGuards {
		if err := guard(ctx, r, "a prompt guard", g, prompt); err != nil {
			return r.end(ctx, transcript.StatusPromptBlocked, transcript.NoticePromptRefused, err.Error(), nil)
		}
	}
	return r.loop(ctx)
}

// loop asks the model, runs the tools it calls, and repeats until the
// model answers without tool calls, the turn fails, or it pauses.
func (r *run) loop(ctx context.Context) error {
	a := r.s.a
	for {
		if err := r.interrupted(ctx); err != nil {
			return r.end(ctx, transcript.StatusCancelled, "", "", err)
		}
		if r.sl.st.open != nil && r.sl.st.open.steps >= a.cfg.MaxSteps {
			return r.end(ctx, transcript.StatusError, "", "", &stepsError{a.cfg.MaxSteps})
		}
		if be := r.overBudget(); be != nil {
			return r.end(ctx, transcript.StatusError, transcript.NoticeOverBudget, be.Error(), be)
		}
		calls, blocked, err := r.step(ctx)
		_, storeFailed := errors.AsType[*storeError](err)
		switch {
		case storeFailed:
			return err
		case err != nil:
			status, notice := transcript.StatusError, ""
			if r.stopped || ctx.Err() != nil {
				status = transcript.StatusCancelled
			} else if errors.Is(err, model.ErrRateLimited) {
				notice = transcript.NoticeRateLimited
			} else if errors.Is(err, model.ErrContextTooLong) {
				notice = transcript.NoticeContextTooLong
				r.sl.overflowed = true
			}
			return r.end(ctx, status, notice, noticeMessage(notice, err), err)
		case blocked != nil:
			return r.end(ctx, transcript.StatusResponseBlocked, transcript.NoticeResponseStopped, blocked.Error(), nil)
		case len(calls) == 0:
			kind, msg := stopNotice(r.stop)
			return r.end(ctx, transcript.StatusOK, kind, msg, nil)
		}
		paused, err := r.handleCalls(ctx, calls)
		if err != nil {
			return err
		}
		if paused {
			return r.pause(ctx)
		}
	}
}

var errOverBudget = errors.New("token budget used up")

// budgetError is the cause of a turn ended over_budget: whose budget ran
// out and how large it is, recorded in the turn's ErrorInfo as fields
// (clients word the refusal from them, not from the message).
type budgetError struct {
	scope  string // "session" or "agent"
	budget int64
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("the %s used its budget of %d tokens", e.scope, e.budget)
}

func (e *budgetError) Is(target error) bool { return target == errOverBudget }

type stepsError struct{ max int }

func (e *stepsError) Error() string {
	return fmt.Sprintf("the turn used its %d model requests without a final answer", e.max)
}

// stopNotice is the notice of an answer the provider stopped before the
// model ended it (model.EventStop), "" for one the model ended.
func stopNotice(stop model.StopReason) (kind, msg string) {
	switch stop {
	case "":
		return "", ""
	case model.StopLength:
		return transcript.NoticeOutputLimit, "the answer reached the model's output token limit and is cut off; raise the limit to let it finish"
	case model.StopFiltered:
		return transcript.NoticeAnswerFiltered, "the model provider's content filter stopped the answer before it was complete"
	}
	return transcript.NoticeAnswerFiltered, "the model provider stopped the answer before it was complete (" + string(stop) + ")"
}

func noticeMessage(kind string, err error) string {
	switch kind {
	case transcript.NoticeRateLimited:
		return "the model provider is rate limiting requests"
	case transcript.NoticeContextTooLong:
		return "the conversation is longer than the model's context window: compact the session, or lower the history's token budget"
	}
	return ""
}

// interrupted reports why the run must stop, if it must.
func (r *run) interrupted(ctx context.Context) error {
	if r.stopped {
		return context.Canceled
	}
	return ctx.Err()
}

// overBudget returns the budget the turn may not go past, nil while
// none is used up.
func (r *run) overBudget() *budgetError {
	a := r.s.a
	u := r.turnUsage()
	if b := a.cfg.SessionTokenBudget; b > 0 && r.sl.st.used+u.InputTokens+u.OutputTokens >= b {
		return &budgetError{scope: "session", budget: b}
	}
	if b := a.cfg.AgentTokenBudget; b > 0 && a.used.Load()+r.usage.InputTokens+r.usage.OutputTokens >= b {
		return &budgetError{scope: "agent", budget: b}
	}
	return nil
}

// step makes one model request and records its answer. It returns the
// tool calls the model asked for, or the guard error that stopped the
// answer, or the model's error. A store failure is a *storeError.
func (r *run) step(ctx context.Context) (calls []transcript.ToolCall, blocked error, err error) {
	a := r.s.a
	msgs, err := r.history(ctx)
	if err != nil {
		return nil, nil, &storeError{err}
	}
	req := &model.Request{Messages: msgs}
	if r.s.mode(r.sl.st) != transcript.ToolModeOff {
		req.Tools = a.specs
	}
	r.emit(Event{Kind: EventStepStart})
	r.observe(ctx, Observation{Kind: ObserveModelStart, Model: a.modelName})
	start := time.Now()
	out := r.stream(ctx, req, start)
	calls, blocked, r.stop = out.calls, out.blocked, out.stop
	modelErr, usage, text := out.err, out.usage, out.text
	if modelErr == nil && r.stopped {
		modelErr = context.Canceled
	}
	r.usage = r.usage.Add(usage)
	var code transcript.ErrorCode
	if modelErr != nil {
		code = errorCode(modelErr)
	}
	r.observe(ctx, Observation{Kind: ObserveModelEnd, Model: a.modelName, Usage: usage, Duration: time.Since(start), ErrorCode: code})
	if modelErr == nil && blocked == nil {
		r.emit(Event{Kind: EventStepEnd})
	}
	if text != "" || (len(calls) > 0 && modelErr == nil && blocked == nil) {
		if modelErr != nil || blocked != nil {
			calls = nil // a broken step's calls never run
		}
		msg := transcript.AssistantMessage{Text: text, ToolCalls: calls, Model: a.modelName}
		if usage != (transcript.Usage{}) {
			msg.Usage = &usage
		}
		if len(calls) == 0 {
			// The turn ends with this step (answered, stopped, or failed):
			// the answer goes with the end (see end).
			r.held = append(r.held, item{transcript.TypeAssistantMessage, r.turnID, "", msg})
		} else if _, err := r.w.append(ctx, transcript.TypeAssistantMessage, r.turnID, "", msg); err != nil {
			return nil, nil, &storeError{err}
		}
		if text != "" && blocked == nil {
			r.texts = append(r.texts, text)
		}
	}
	return calls, blocked, modelErr
}

// streamed is what a step's model stream gave.
type streamed struct {
	text    string
	calls   []transcript.ToolCall
	usage   transcript.Usage
	blocked error // the answer guard that stopped the answer
	err     error // the model's
	stop    model.StopReason
}

// stream reads the model's answer to req, emitting it as it comes. What
// the loop gathers lives in the run (r.text, r.out), not in variables of
// its own: the loop body is a closure the model's iterator calls, and
// every variable it writes would be allocated on the heap, each step.
func (r *run) stream(ctx context.Context, req *model.Request, start time.Time) streamed {
	r.out = streamed{}
	r.text.Reset()
	r.read(ctx, req, start)
	out := r.out
	out.text = r.text.String()
	r.out = streamed{}
	return out
}

// read is stream's reading of the model's answer into r.out and r.text,
// from the request made at start. A panic of the model's (its Stream, or
// its iterator) ends the turn, as the model's error; one of the
// consumer's, raised in yield, is the consumer's own (panic.go), and ends
// the model call for observers (as endIfConsumerPanicked ends the turn).
func (r *run) read(ctx context.Context, req *model.Request, start time.Time) {
	defer func() {
		if p := recover(); p != nil {
			if r.yielding {
				r.observe(ctx, Observation{Kind: ObserveModelEnd, Model: r.s.a.modelName, Usage: r.out.usage, Duration: time.Since(start), ErrorCode: transcript.CodeCancelled})
				panic(p)
			}
			r.out.err = r.s.a.panicked(ctx, "the model", p)
		}
	}()
	for ev, err := range r.s.a.cfg.Model.Stream(ctx, req) {
		if err != nil {
			r.out.err = err
			break
		}
		switch ev.Kind {
		case model.EventText:
			if r.text.Cap() == 0 {
				r.text.Grow(streamText)
			}
			r.text.WriteString(ev.Text)
			if r.emit(Event{Kind: EventText, Text: ev.Text}) {
				r.out.blocked = r.checkAnswer(ctx, r.text.String())
			}
		case model.EventToolCall:
			c := ev.ToolCall
			if c.ID == "" {
				// A call the model gave no id (a model of the caller's,
				// or a server that streams none) gets one, so that its
				// events, its approval, its result and the history all
				// name it the same way.
				c.ID = model.NewCallID()
			}
			c.Arguments = storableArguments(c.Arguments)
			r.out.calls = append(r.out.calls, c)
			r.emit(Event{Kind: EventToolCall, ToolCall: &c})
		case model.EventUsage:
			r.out.usage = ev.Usage
		case model.EventStop:
			r.out.stop = ev.Stop
		}
		if r.stopped || r.out.blocked != nil {
			break
		}
	}
}

// streamText is the room a step's text gets at first: a short answer
// without growing the buffer as its deltas come.
const streamText = 256

// maxArgumentDepth bounds the nesting of tool arguments a transcript
// keeps as JSON. The entry holding them nests a few levels deeper, and
// encoding/json refuses documents nested past 10,000 levels.
const maxArgumentDepth = 1000

// storableArguments returns a call's arguments as the transcript keeps
// them: valid JSON nested at most maxArgumentDepth deep as it is, anything
// else as a JSON string of its text, as a model's malformed arguments are.
func storableArguments(args json.RawMessage) json.RawMessage {
	if json.Valid(args) && depth(args) <= maxArgumentDepth {
		return args
	}
	s, _ := json.Marshal(string(args))
	return s
}

// depth returns how deeply the valid JSON b nests arrays and objects.
func depth(b []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// checkAnswer runs the answer guards over the step's text so far.
func (r *run) checkAnswer(ctx context.Context, text string) error {
	for _, g := range r.s.a.cfg.AnswerGuards {
		if err := guard(ctx, r, "an answer guard", g, text); err != nil {
			return err
		}
	}
	return nil
}

// history returns the request history: the session state's, which
// follows every entry this process appended or read. Only when the state
// has forgotten entries the history now reaches (history.Builder.Forget)
// is the transcript read again. The messages are the Builder's View,
// which the next step's request writes over: a model reads its request
// during its Stream (model.Request).
func (r *run) history(ctx context.Context) ([]model.Message, error) {
	st := r.sl.st
	msgs, full := st.hist.View()
	if !full && st.hist.Base() > 0 {
		entries, err := r.s.a.cfg.Store.Read(ctx, r.s.key)
		if err != nil {
			return nil, err
		}
		if len(entries) != st.count || entries[len(entries)-1].ID != st.head {
			// Another writer appended since the state was current: the
			// turn cannot go on with a history it cannot build.
			return nil, fmt.Errorf("spool: session %s changed during the turn: %w", r.s.key, store.ErrConflict)
		}
		b := history.NewBuilder(st.hist.Options())
		for _, e := range entries {
			b.Add(e)
		}
		st.hist = b
		msgs, _ = b.View()
	}
	st.hist.Forget()
	return msgs, nil
}

// handleCalls runs the calls of a step, or asks for approval of those that
// need it. It reports whether the turn paused for approvals.
func (r *run) handleCalls(ctx context.Context, calls []transcript.ToolCall) (bool, error) {
	st := r.sl.st
	var asked []Approval
	for _, c := range calls {
		if r.interrupted(ctx) != nil {
			// The turn was stopped: later calls are not started, and say so.
			if err := r.recordResult(ctx, notRun(c.ID, c.Name)); err != nil {
				return false, err
			}
			continue
		}
		if r.needsApproval(c.Name) {
			id := "apr_" + transcript.NewID(r.s.a.now())
			e, err := r.w.append(ctx, transcript.TypeApprovalRequest, r.turnID, "", transcript.ApprovalRequest{
				ApprovalID: id, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments,
			})
			if err != nil {
				return false, err
			}
			ap := st.requests[id]
			ap.Requested = e.Timestamp
			asked = append(asked, ap)
			r.emit(Event{Kind: EventApprovalRequest, Approval: &ap})
			continue
		}
		if err := r.execute(ctx, c); err != nil {
			return false, err
		}
	}
	return len(asked) > 0, nil
}

func (r *run) needsApproval(name string) bool {
	t := r.s.a.tools[name]
	return t != nil && t.RequiresApproval() &&
		r.s.mode(r.sl.st) == transcript.ToolModeAsk && !r.sl.st.approved[name]
}

// execute runs one call and records its result. A failing, timed-out,
// unknown or forbidden tool is a result for the model, not an error of
// the turn; only a store failure is.
func (r *run) execute(ctx context.Context, c transcript.ToolCall) error {
	a := r.s.a
	res := transcript.ToolResult{CallID: c.ID, Tool: c.Name}
	outcome := OutcomeOK
	start := time.Now()
	t := a.tools[c.Name]
	// Observers get the name of one of the agent's tools, or none: a name
	// no tool has is the model's text, which a prompt can make anything
	// (the user's words among them), and it would label metrics with a
	// series per name it invents.
	observed := ""
	if t != nil {
		observed = c.Name
	}
	// A start for every end, also for a call that cannot run: observers
	// pair them (the Observer contract).
	r.observe(ctx, Observation{Kind: ObserveToolStart, Tool: observed, CallID: c.ID})
	switch {
	case r.s.mode(r.sl.st) == transcript.ToolModeOff:
		res.Result, res.IsError, outcome = "tools are off in this session", true, OutcomeError
	case t == nil:
		res.Result, res.IsError, outcome = fmt.Sprintf("there is no tool named %q", c.Name), true, OutcomeError
	default:
		tctx, em := withEmitter(ctx, r, c.ID)
		out, err := t.Run(tctx, c.Arguments, a.cfg.ToolTimeout)
		if p := em.close(); p != nil { // a delegate still running after a timeout emits nothing more
			// The consumer's, raised in its loop body on the tool's
			// goroutine (see emitter): the call ends for observers too.
			r.observe(ctx, Observation{Kind: ObserveToolEnd, Tool: observed, CallID: c.ID, Duration: time.Since(start), Outcome: OutcomeError})
			panic(p)
		}
		switch {
		case err == nil:
			res.Result = out
		case errors.Is(err, tool.ErrTimeout):
			res.Result, res.IsError, outcome = err.Error(), true, OutcomeTimeout
		default:
			res.Result, res.IsError, outcome = err.Error(), true, OutcomeError
		}
	}
	res.DurationMs = time.Since(start).Milliseconds()
	r.observe(ctx, Observation{Kind: ObserveToolEnd, Tool: observed, CallID: c.ID, Duration: time.Since(start), Outcome: outcome})
	return r.recordResult(ctx, res)
}

// notRun is the result of a call the turn's stop kept from running.
func notRun(callID, tool string) transcript.ToolResult {
	return transcript.ToolResult{CallID: callID, Tool: tool, Result: "not run: the turn was stopped", IsError: true}
}

func (r *run) recordResult(ctx context.Context, res transcript.ToolResult) error {
	if _, err := r.w.append(ctx, transcript.TypeToolResult, r.turnID, "", res); err != nil {
		return err
	}
	r.emit(Event{Kind: EventToolResult, ToolResult: &res})
	return nil
}

// pause ends this call with the turn waiting on approvals. A turn that
// was stopped meanwhile (a call of its step ran when Stop came, or the
// caller's context ended) ends cancelled instead (endStopped): pausing
// would let a later Approve run the tool and ask the model again, after
// the stop.
func (r *run) pause(ctx context.Context) error {
	if err := r.interrupted(ctx); err != nil {
		return r.endStopped(ctx, err)
	}
	r.ended = true
	r.s.a.used.Add(r.usage.InputTokens + r.usage.OutputTokens)
	r.observe(ctx, Observation{Kind: ObserveTurnEnd, Status: StatusAwaitingApproval, Usage: r.turnUsage(), Duration: time.Since(r.started)})
	res := r.result(StatusAwaitingApproval)
	for _, p := range r.sl.st.pending {
		if p.TurnID == r.turnID {
			res.Pending = append(res.Pending, p)
		}
	}
	r.emit(Event{Kind: EventTurnEnd, Result: res})
	return nil
}

// endStopped ends a stopped turn, cancelled. Each of its calls still
// waiting on an approval is settled first, as a call the stop kept from
// starting is: denied, and its result saying it did not run. The decision
// is what takes the approval out of the session's pending ones in every
// store's SessionInfo, which counts requests less decisions.
func (r *run) endStopped(ctx context.Context, cause error) error {
	var items []item
	var results []transcript.ToolResult
	for _, p := range r.sl.st.pending {
		if p.TurnID != r.turnID {
			continue
		}
		res := notRun(p.CallID, p.Tool)
		items = append(items,
			item{transcript.TypeApprovalDecision, r.turnID, "", transcript.ApprovalDecision{
				ApprovalID: p.ID, CallID: p.CallID, Decision: transcript.VerdictDeny, Scope: transcript.ApprovalScopeOnce, Reason: "the turn was stopped",
			}},
			item{transcript.TypeToolResult, r.turnID, "", res})
		results = append(results, res)
	}
	if len(items) > 0 {
		if _, err := r.w.appendAll(ctx, items); err != nil {
			return err
		}
		for i := range results {
			r.emit(Event{Kind: EventToolResult, ToolResult: &results[i]})
		}
	}
	return r.end(ctx, transcript.StatusCancelled, "", "", cause)
}

func (r *run) result(status transcript.Status) *Result {
	return &Result{
		SessionID:  r.s.key.ID,
		TurnID:     r.turnID,
		Status:     status,
		Text:       strings.Join(r.texts, "\n\n"),
		Usage:      r.turnUsage(),
		Model:      r.s.a.modelName,
		Supersedes: r.supersedes(),
	}
}

func (r *run) supersedes() []string {
	if r.marker == nil {
		return nil
	}
	return r.marker.Supersedes
}

// end records the turn's end (after a governance notice, when there is
// one) and emits it. cause is what ended a turn with error or cancelled.
func (r *run) end(ctx context.Context, status transcript.Status, noticeKind, noticeMsg string, cause error) error {
	a := r.s.a
	items := r.held
	r.held = nil
	if noticeKind != "" {
		if noticeMsg == "" && cause != nil {
			noticeMsg = cause.Error()
		}
		items = append(items, item{transcript.TypeGovernanceNotice, r.turnID, "", transcript.GovernanceNotice{Kind: noticeKind, Message: noticeMsg}})
	}
	end := transcript.TurnEnd{Usage: r.turnUsage(), DurationMs: time.Since(r.started).Milliseconds()}
	if status == transcript.StatusError || status == transcript.StatusCancelled {
		if cause == nil {
			cause = context.Canceled
		}
		end.Error = &transcript.ErrorInfo{Code: errorCode(cause), Message: errorMessage(cause)}
		if be, ok := errors.AsType[*budgetError](cause); ok {
			end.Error.Budget, end.Error.BudgetScope = be.budget, be.scope
		}
	}
	// The step's answer, the notice and the end are ready together: one
	// durable write (store.AppendBatch) records the turn's end.
	items = append(items, item{transcript.TypeTurnEnd, r.turnID, status, end})
	if _, err := r.w.appendAll(ctx, items); err != nil {
		return err
	}
	r.ended = true
	a.used.Add(r.usage.InputTokens + r.usage.OutputTokens)
	var code transcript.ErrorCode
	if end.Error != nil {
		code = end.Error.Code
	}
	r.observe(ctx, Observation{Kind: ObserveTurnEnd, Status: status, Usage: end.Usage, Duration: time.Since(r.started), ErrorCode: code})
	level := slog.LevelDebug
	if status == transcript.StatusError {
		level = slog.LevelWarn
	}
	// Ids, status and counts only: content never reaches the log.
	a.log.LogAttrs(ctx, level, "turn ended",
		slog.String("session", r.s.key.ID), slog.String("turn", r.turnID), slog.String("status", string(status)),
		slog.String("code", string(code)), slog.Int64("inputTokens", end.Usage.InputTokens), slog.Int64("outputTokens", end.Usage.OutputTokens))
	res := r.result(status)
	res.Error, res.DurationMs = end.Error, end.DurationMs
	res.cause = cause
	if noticeKind != "" {
		res.Notice, res.NoticeKind = noticeMsg, noticeKind
	}
	if status == transcript.StatusResponseBlocked {
		res.Text = ""
	}
	r.emit(Event{Kind: EventTurnEnd, Result: res})
	return nil
}

// errorCode names a turn's failure for the transcript and observers.
func errorCode(err error) transcript.ErrorCode {
	var me *model.Error
	var se *stepsError
	var ste *storeError
	switch {
	case errors.As(err, &ste):
		return transcript.CodeStoreError
	case errors.As(err, &me):
		return me.Code
	case errors.As(err, &se):
		return transcript.CodeMaxSteps
	case errors.Is(err, errOverBudget):
		return transcript.CodeOverBudget
	case errors.Is(err, context.Canceled):
		return transcript.CodeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return transcript.CodeDeadlineExceeded
	}
	return transcript.CodeModelError
}

// errorMessage is the part of an error fit for the transcript: model
// errors say what the provider said, never the request.
func errorMessage(err error) string {
	var me *model.Error
	if errors.As(err, &me) {
		return me.Message
	}
	return err.Error()
}
