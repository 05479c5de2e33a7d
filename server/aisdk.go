package server

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/transcript"
)

// POST /api/chat speaks the AI SDK's UI message stream protocol (version
// "v1" of the x-vercel-ai-ui-message-stream header), so that an
// unmodified useChat / DefaultChatTransport client works against spool:
//
//   - The request is {id, messages, trigger, messageId}. The chat id is
//     the session id. The newest message is what is asked: a user
//     message's text parts are the prompt (the history comes from the
//     transcript, never from the client), and an assistant message whose
//     tool parts are in state "approval-responded" answers those
//     approvals, which resumes the turn.
//   - The earlier messages only place the newest one (aiTarget): a list
//     that stops short of the session's newest turn, with the newest user
//     message where an earlier question was, is an edit of that question
//     (spool.Session.Edit), and so is submit-message with the messageId of
//     the user message it replaces (useChat's sendMessage({messageId})).
//     trigger "regenerate-message" (regenerate()) answers the turn again:
//     the newest turn with Regenerate, an earlier one (regenerate({
//     messageId})) with an edit of it to the same question. A user
//     message is known by the id the client gave it, which the session
//     keeps (transcript.UserMessage.ClientID), so the id useChat holds and
//     the one GET /api/chat/{id} returns are the same. Assistant
//     messages are placed by their ids, which are the ids of the turns
//     (the start chunk's messageId); a list with no assistant message and
//     no messageId always asks a new question, so that a client sending
//     only its newest message keeps working, and a messageId that names
//     no message of the chat, in such a list, is 400: nothing places it.
//   - The response is SSE "data: <chunk JSON>" lines: start (messageId:
//     the turn id, or for a resumed turn the id of the message it
//     continues; GET /api/chat/{id} gives the message the same id),
//     start-step, text-start/text-delta/text-end, tool-input-available,
//     tool-approval-request, tool-output-available, tool-output-error,
//     tool-output-denied, finish-step, error, abort (a turn stopped,
//     recorded cancelled: no error, as streamText ends an aborted
//     answer), finish (with finishReason, see finishReason, and
//     messageMetadata, an aiMetadata: model, usage, status, durationMs),
//     and "data: [DONE]". The result of a call answered by an approval
//     comes before the first step of the resumed turn, outside any step.
//     Chunks carry only the fields the protocol documents: the client
//     validates them.

// aiChatRequest is the body DefaultChatTransport sends. Unknown fields are
// allowed: clients add their own.
type aiChatRequest struct {
	ID        string      `json:"id"`
	Messages  []uiMessage `json:"messages"`
	Trigger   string      `json:"trigger"`
	MessageID string      `json:"messageId"`
}

type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text"`
	ToolCallID string      `json:"toolCallId"`
	State      string      `json:"state"`
	Approval   *uiApproval `json:"approval"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// AIStreamHeader is the header that marks a UI message stream.
const AIStreamHeader = "X-Vercel-Ai-Ui-Message-Stream"

// handleAIChat is POST /api/chat.
func (s *Server) handleAIChat(w http.ResponseWriter, r *http.Request) {
	var req aiChatRequest
	if err := decodeJSON(r, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch req.Trigger {
	case "", "submit-message", "regenerate-message":
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"trigger" must be "submit-message" or "regenerate-message"`))
		return
	}
	if req.ID == "" {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"id" (the chat id) is missing`))
		return
	}
	if len(req.Messages) == 0 {
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, `"messages" is empty`))
		return
	}
	ctx, _, aerr := s.withUser(r)
	if aerr != nil {
		s.writeError(w, r, aerr)
		return
	}
	sess, err := s.sessionFor(ctx, req.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	aw := s.newAIWriter(w, r)
	var events iter.Seq2[spool.Event, error]
	switch last.Role {
	case "user":
		prompt := userText(last)
		if strings.TrimSpace(prompt) == "" {
			s.writeError(w, r, errf(http.StatusBadRequest, CodeEmptyPrompt, "the newest user message has no text"))
			return
		}
		t, err := aiTarget(ctx, sess, req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		events = s.detach(ctx, func(ctx context.Context) iter.Seq2[spool.Event, error] {
			if len(last.ID) <= maxClientMessageID {
				// The transcript keeps the client's id for the question,
				// so that GET /api/chat/{id} gives it back and a later
				// edit or regenerate addressed by it finds it.
				ctx = spool.ContextWithClientMessageID(ctx, last.ID)
			}
			switch {
			case t.regenerate:
				return sess.RegenerateStream(ctx)
			case t.turn != "":
				return sess.EditStream(ctx, t.turn, prompt)
			}
			return sess.Stream(ctx, prompt)
		})
	case "assistant":
		if req.Trigger == "regenerate-message" {
			s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, "regenerate-message needs the messages up to the user message whose answer is regenerated"))
			return
		}
		answers := approvalAnswers(last)
		if len(answers) == 0 {
			s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, "the newest message is neither a user message nor an assistant message with answered approvals"))
			return
		}
		aw.messageID = req.MessageID
		if aw.messageID == "" {
			aw.messageID = last.ID
		}
		resolve, err := s.resolveAll(ctx, sess, answers, aw.denied)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		events = s.detach(ctx, resolve)
	default:
		s.writeError(w, r, errf(http.StatusBadRequest, CodeBadRequest, "the newest message must be from the user, or answer approvals"))
		return
	}
	aw.run(events)
}

// maxClientMessageID bounds the client's id for a user message that the
// transcript keeps: useChat's are 16 characters, a UUID 36; a longer one
// is not kept, and the message is known by its entry id.
const maxClientMessageID = 256

// aiAction is what a request whose newest message is a user message
// asks: a new turn (the zero aiAction), the newest turn answered again
// (regenerate), or the question of turn asked again as the newest
// message's text.
type aiAction struct {
	regenerate bool
	turn       string
}

// aiTarget places the newest user message of req in the session's active
// branch (see the protocol notes above). The common request, a new
// question after the newest answer, costs a read of the newest message;
// placing an edit reads the session's messages.
func aiTarget(ctx context.Context, sess *spool.Session, req aiChatRequest) (aiAction, error) {
	msgs := req.Messages
	last, prefix := msgs[len(msgs)-1], msgs[:len(msgs)-1]
	regen := req.Trigger == "regenerate-message"
	anchor, after := -1, 0 // the last assistant message before it, and the user messages since
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i].Role == "assistant" {
			anchor = i
			break
		}
		if prefix[i].Role == "user" {
			after++
		}
	}
	if !regen && anchor < 0 && req.MessageID == "" {
		return aiAction{}, nil
	}
	newest, err := sess.Messages(ctx, 1)
	if err != nil {
		return aiAction{}, err
	}
	if len(newest) == 0 {
		return aiAction{}, nil // nothing to edit or regenerate: ask
	}
	if !regen && req.MessageID == "" && prefix[anchor].ID == newest[0].TurnID && after == 0 {
		return aiAction{}, nil
	}
	// The user messages as GET /api/chat/{id} gives them, so that an id
	// the client holds, its own or one a reload gave, names the same one.
	entries, err := sess.Transcript(ctx)
	if err != nil {
		return aiAction{}, err
	}
	var turns []string
	texts := map[string]string{}
	for _, m := range uiMessages(entries) {
		if m.Role != "user" {
			continue
		}
		if !slices.Contains(turns, m.turnID) {
			turns = append(turns, m.turnID)
			texts[m.turnID] = *m.Parts[0].Text
		}
		if m.ID == req.MessageID {
			req.MessageID = m.turnID
		}
	}
	j := -1
	switch {
	case slices.Contains(turns, req.MessageID):
		j = slices.Index(turns, req.MessageID)
	case anchor >= 0 && slices.Contains(turns, prefix[anchor].ID):
		j = slices.Index(turns, prefix[anchor].ID) + 1 + after
	case anchor < 0 && req.MessageID != "":
		// Nothing the chat holds has that id, and no answer in the list
		// places the message: counting the questions sent would take a
		// client that sends only its newest message to be editing the
		// first question.
		id := req.MessageID
		if len(id) > maxClientMessageID {
			id = id[:maxClientMessageID] + "…" // no message has a longer one: the error need not echo it all
		}
		return aiAction{}, errf(http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(`"messageId" %q names no message of chat %s`, id, sess.ID()))
	case anchor < 0 && regen:
		j = after // every message before it is a question
	}
	if j < 0 || j >= len(turns) {
		if regen {
			return aiAction{regenerate: true}, nil
		}
		return aiAction{}, nil // it follows the newest turn, or nothing places it: ask
	}
	if regen && j == len(turns)-1 && userText(last) == texts[turns[j]] {
		return aiAction{regenerate: true}, nil
	}
	return aiAction{turn: turns[j]}, nil
}

func userText(m uiMessage) string {
	var texts []string
	for _, p := range m.Parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// approvalAnswers returns the approvals a message answers: its tool parts
// (type "tool-<name>" or "dynamic-tool") in state approval-responded.
func approvalAnswers(m uiMessage) []uiApproval {
	var out []uiApproval
	for _, p := range m.Parts {
		isTool := strings.HasPrefix(p.Type, "tool-") || p.Type == "dynamic-tool"
		if isTool && p.State == "approval-responded" && p.Approval != nil && p.Approval.ID != "" && p.Approval.Approved != nil {
			out = append(out, *p.Approval)
		}
	}
	return out
}

// resolveAll answers the approvals still pending among answers, one after
// the other, as one stream of events (run under the context it is given);
// the pauses between them are left out. The call ids of denied calls are
// put in denied. None pending is ErrNoApproval.
func (s *Server) resolveAll(ctx context.Context, sess *spool.Session, answers []uiApproval, denied map[string]bool) (func(context.Context) iter.Seq2[spool.Event, error], error) {
	pending, err := sess.PendingApprovals(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]spool.Approval{}
	for _, p := range pending {
		byID[p.ID] = p
	}
	var todo []uiApproval
	for _, a := range answers {
		if p, ok := byID[a.ID]; ok {
			todo = append(todo, a)
			if !*a.Approved {
				denied[p.CallID] = true
			}
		}
	}
	if len(todo) == 0 {
		return nil, spool.ErrNoApproval
	}
	return func(ctx context.Context) iter.Seq2[spool.Event, error] {
		return func(yield func(spool.Event, error) bool) {
			for i, a := range todo {
				d := spool.Decision{Allow: *a.Approved, Scope: transcript.ApprovalScopeOnce, Reason: a.Reason}
				lastOne := i == len(todo)-1
				for ev, err := range sess.Resolve(ctx, a.ID, d) {
					if err != nil {
						yield(ev, err)
						return
					}
					if ev.Kind == spool.EventTurnStart && i > 0 {
						continue
					}
					if ev.Kind == spool.EventTurnEnd && !lastOne && ev.Result.Status == spool.StatusAwaitingApproval {
						continue
					}
					if !yield(ev, nil) {
						return
					}
				}
			}
		}
	}, nil
}

// aiWriter turns a turn's events into UI message stream chunks.
type aiWriter struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	sse       *sseWriter
	messageID string
	denied    map[string]bool // call ids whose approval was denied
	decisions map[string]bool // call ids denied, as the transcript says (a resumed stream)
	calls     map[string]bool // call ids this response streamed the input of
	stepOpen  bool
	textID    string // the open text part, "" when none
	eventID   string // the id of the event whose chunks are being sent
	failed    bool
	refused   bool // an error answered the request before any stream
	// earlier, on the resume route, gives the parts the streamed message
	// had before the run that ev begins: the stream is a replay of the
	// whole message (the client starts it anew), and a run an approval's
	// answer began continues a message that earlier runs started.
	earlier func(ev spool.Event) ([]aiUIPart, error)
}

// newAIWriter returns an aiWriter answering r on w, its maps made: the
// chat route and the resume route both stream tool calls.
func (s *Server) newAIWriter(w http.ResponseWriter, r *http.Request) *aiWriter {
	return &aiWriter{s: s, w: w, r: r, denied: map[string]bool{}, calls: map[string]bool{}}
}

// Chunks of the protocol, with exactly its fields.
type (
	chunkType struct {
		Type string `json:"type"`
	}
	chunkStart struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId,omitempty"`
	}
	chunkText struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	chunkTextDelta struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Delta string `json:"delta"`
	}
	chunkToolInput struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Input      any    `json:"input"`
	}
	chunkApproval struct {
		Type       string `json:"type"`
		ApprovalID string `json:"approvalId"`
		ToolCallID string `json:"toolCallId"`
	}
	chunkToolOutput struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		Output     any    `json:"output"`
	}
	chunkToolError struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ErrorText  string `json:"errorText"`
	}
	chunkToolDenied struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
	}
	chunkError struct {
		Type      string `json:"type"`
		ErrorText string `json:"errorText"`
	}
	chunkAbort struct {
		Type   string `json:"type"`
		Reason string `json:"reason,omitempty"`
	}
	chunkFinish struct {
		Type            string      `json:"type"`
		FinishReason    string      `json:"finishReason,omitempty"`
		MessageMetadata *aiMetadata `json:"messageMetadata,omitempty"`
	}
)

func (a *aiWriter) send(v any) {
	if a.sse != nil && !a.failed && a.sse.eventID("", a.eventID, v) != nil {
		a.failed = true
	}
}

// begin starts the stream: the header, then the start chunk.
func (a *aiWriter) begin() {
	a.sse = startSSE(a.w, a.s.opts.KeepAlive, map[string]string{AIStreamHeader: "v1"})
	a.send(chunkStart{Type: "start", MessageID: a.messageID})
}

func (a *aiWriter) closeText() {
	if a.textID != "" {
		a.send(chunkText{Type: "text-end", ID: a.textID})
		a.textID = ""
	}
}

func (a *aiWriter) openStep() {
	if !a.stepOpen {
		a.send(chunkType{Type: "start-step"})
		a.stepOpen = true
	}
}

func (a *aiWriter) closeStep() {
	a.closeText()
	if a.stepOpen {
		a.send(chunkType{Type: "finish-step"})
		a.stepOpen = false
	}
}

// finish ends the stream, with an error chunk first when errText is set;
// the finish chunk carries why the turn ended (reason) and the message's
// metadata when the turn's result is known.
func (a *aiWriter) finish(errText, reason string, md *aiMetadata) {
	a.closeStep()
	if errText != "" {
		a.send(chunkError{Type: "error", ErrorText: errText})
	}
	a.send(chunkFinish{Type: "finish", FinishReason: reason, MessageMetadata: md})
	if a.sse != nil && !a.failed {
		a.sse.raw("[DONE]")
	}
}

func (a *aiWriter) run(events iter.Seq2[spool.Event, error]) {
	defer func() {
		if a.sse != nil {
			a.sse.close()
		}
	}()
	for ev, err := range events {
		if err != nil {
			if a.sse == nil {
				a.refused = true
				a.s.writeError(a.w, a.r, err)
				return
			}
			a.finish(errorText(a.s.streamError(a.r, err)), "error", nil)
			return
		}
		if a.sse == nil {
			if a.messageID == "" {
				a.messageID = ev.TurnID
			}
			var parts []aiUIPart
			if a.earlier != nil {
				if parts, err = a.earlier(ev); err != nil {
					a.refused = true
					a.s.writeError(a.w, a.r, err)
					return
				}
			}
			a.begin()
			a.replay(parts)
		}
		a.eventID = ev.ID
		a.event(ev)
		if a.failed {
			return // the client went away: stopping stops the turn
		}
		if ev.Kind == spool.EventTurnEnd {
			var md *aiMetadata
			if ev.Result != nil {
				md = resultMetadata(ev.Result)
			}
			if ev.Result != nil && ev.Result.Status == transcript.StatusCancelled {
				// A stopped turn is no failure: as streamText ends an
				// aborted answer, an abort chunk, which the client takes
				// quietly (no onError, the chat ready, what came kept).
				a.closeStep()
				a.send(chunkAbort{Type: "abort", Reason: resultError(ev.Result).Message})
				a.finish("", finishReason(ev.Result), md)
				return
			}
			a.finish(turnEndError(ev.Result), finishReason(ev.Result), md)
			return
		}
	}
}

func (a *aiWriter) event(ev spool.Event) {
	switch ev.Kind {
	case spool.EventStepStart:
		a.closeStep()
		a.openStep()
	case spool.EventText:
		a.openStep()
		if a.textID == "" {
			// Unique across the responses that add to one message.
			a.textID = "txt_" + transcript.NewID(time.Now())
			a.send(chunkText{Type: "text-start", ID: a.textID})
		}
		a.send(chunkTextDelta{Type: "text-delta", ID: a.textID, Delta: ev.Text})
	case spool.EventToolCall:
		a.openStep()
		a.closeText()
		a.calls[ev.ToolCall.ID] = true
		a.send(chunkToolInput{Type: "tool-input-available", ToolCallID: ev.ToolCall.ID, ToolName: ev.ToolCall.Name, Input: ev.ToolCall.Arguments})
	case spool.EventStepEnd:
		// The step stays open until the next one starts, so that its
		// tool results land inside it.
		a.closeText()
	case spool.EventApprovalRequest:
		a.openStep()
		a.send(chunkApproval{Type: "tool-approval-request", ApprovalID: ev.Approval.ID, ToolCallID: ev.Approval.CallID})
	case spool.EventToolResult:
		// The result of a call an earlier response streamed (an approval
		// answered now) belongs to the step that asked for it: it opens
		// no step, which would leave an empty step-start part.
		tr := ev.ToolResult
		if a.calls[tr.CallID] {
			a.openStep()
		}
		switch {
		case a.deniedCall(tr):
			a.send(chunkToolDenied{Type: "tool-output-denied", ToolCallID: tr.CallID})
		case tr.IsError:
			a.send(chunkToolError{Type: "tool-output-error", ToolCallID: tr.CallID, ErrorText: tr.Result})
		default:
			a.send(chunkToolOutput{Type: "tool-output-available", ToolCallID: tr.CallID, Output: tr.Result})
		}
	}
}

// replay sends parts, a message's stored start, as the chunks that make
// them, each step closed. Its calls stay out of a.calls, as they are out
// of the map of the response that answered the approval: a result of one
// of them joins the step that asked for it. A denied call's approval has
// no chunk for the person's answer, so the client shows it denied
// without the reason; GET /api/chat/{id} has the reason.
func (a *aiWriter) replay(parts []aiUIPart) {
	for _, p := range parts {
		switch {
		case p.Type == "step-start":
			a.closeStep()
			a.openStep()
		case p.Type == "text" && p.Text != nil:
			a.openStep()
			id := "txt_" + transcript.NewID(time.Now())
			a.send(chunkText{Type: "text-start", ID: id})
			a.send(chunkTextDelta{Type: "text-delta", ID: id, Delta: *p.Text})
			a.send(chunkText{Type: "text-end", ID: id})
		case strings.HasPrefix(p.Type, "tool-"):
			a.openStep()
			a.send(chunkToolInput{Type: "tool-input-available", ToolCallID: p.ToolCallID, ToolName: strings.TrimPrefix(p.Type, "tool-"), Input: p.Input})
			if p.Approval != nil {
				a.send(chunkApproval{Type: "tool-approval-request", ApprovalID: p.Approval.ID, ToolCallID: p.ToolCallID})
			}
			switch {
			case p.State == "output-denied":
				a.send(chunkToolDenied{Type: "tool-output-denied", ToolCallID: p.ToolCallID})
			case p.State == "output-error" && p.ErrorText != nil:
				a.send(chunkToolError{Type: "tool-output-error", ToolCallID: p.ToolCallID, ErrorText: *p.ErrorText})
			case p.State == "output-available" && p.Output != nil:
				a.send(chunkToolOutput{Type: "tool-output-available", ToolCallID: p.ToolCallID, Output: *p.Output})
			}
		}
	}
	a.closeStep()
}

// deniedCall reports whether tr is the result of a call whose approval
// was denied. A response that answered the approval knows (a.denied); a
// resumed stream (GET /api/chat/{id}/stream) replays a run that another
// request began with the decision, so for an error result of a call it
// did not stream it asks the transcript, where the decision is recorded
// before the result: the replay then equals the live stream.
func (a *aiWriter) deniedCall(tr *transcript.ToolResult) bool {
	if a.denied[tr.CallID] {
		return true
	}
	if !tr.IsError || a.calls[tr.CallID] || a.r.PathValue("id") == "" {
		return false
	}
	if a.decisions == nil {
		a.decisions = map[string]bool{}
		ctx, _, aerr := a.s.withUser(a.r)
		if aerr != nil {
			return false
		}
		sess, err := a.s.agent.Session(ctx, a.r.PathValue("id"))
		if err != nil {
			return false
		}
		entries, err := sess.Transcript(ctx)
		if err != nil {
			return false
		}
		for _, e := range entries {
			var d transcript.ApprovalDecision
			if e.Type == transcript.TypeApprovalDecision && e.DecodeData(&d) == nil {
				a.decisions[d.CallID] = d.Decision == transcript.VerdictDeny
			}
		}
	}
	return a.decisions[tr.CallID]
}

// errorText is the error chunk's text of a failure inside the stream:
// the error's message and the request's id, which the other routes'
// error events carry as requestId (an internal error's cause is logged
// under it). The chunk has no field for the id: older releases of the
// ai package refuse a chunk with a field they do not know (the chunks
// keep to the documented fields), and errorText is what clients show.
func errorText(ae *apiError) string {
	if ae.RequestID == "" {
		return ae.Message
	}
	return ae.Message + " (request id " + ae.RequestID + ")"
}

// turnEndError is the error text of a turn that did not end well, or "".
func turnEndError(res *spool.Result) string {
	if res == nil {
		return ""
	}
	switch res.Status {
	case transcript.StatusError, transcript.StatusCancelled:
		return resultError(res).Message
	case transcript.StatusPromptBlocked, transcript.StatusResponseBlocked:
		if res.Notice != "" {
			return res.Notice
		}
		return "the answer was stopped"
	}
	return ""
}

// finishReason is the finish chunk's finishReason for a turn's result:
// what the client passes to onFinish, as a streamText server sends it.
// "tool-calls" is a turn paused on approvals; "length" and
// "content-filter" an answer the provider or a guard stopped short.
func finishReason(res *spool.Result) string {
	if res == nil {
		return ""
	}
	switch res.Status {
	case spool.StatusAwaitingApproval:
		return "tool-calls"
	case transcript.StatusError:
		return "error"
	case transcript.StatusPromptBlocked, transcript.StatusResponseBlocked:
		return "content-filter"
	case transcript.StatusOK:
		switch res.NoticeKind {
		case transcript.NoticeOutputLimit:
			return "length"
		case transcript.NoticeAnswerFiltered:
			return "content-filter"
		}
		return "stop"
	}
	return "other"
}
