package server

import (
	"encoding/json"
	"net/http"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/transcript"
)

// GET /api/chat/{id} returns a stored conversation in the AI SDK's own
// shape, {"id", "messages": UIMessage[]}, so that a useChat app loads it
// with one fetch (useChat({id, messages})) and goes on with it:
//
//   - The messages are the session's active branch, oldest first: each
//     user message as a "user" UIMessage whose id is the one the client
//     gave it when it sent it (the message's clientId in the transcript),
//     or the entry's id for a message sent without one or whose id an
//     earlier message of the list already has (POST /api/chat accepts
//     either as a messageId), each turn's answer as one
//     "assistant" UIMessage whose id is the turn id, the id the stream's
//     start chunk gave it.
//   - An assistant message has a step-start part per model request, its
//     text, and a "tool-<name>" part per tool call with the state the
//     stream left it in: input-available, approval-requested (with
//     approval.id), approval-responded, output-available, output-error,
//     output-denied (with approval.approved and approval.reason). spool
//     keeps no reasoning, so there are no reasoning parts.
//   - Its metadata is aiMetadata, what the stream's finish chunk carries.

// aiChat is the body of GET /api/chat/{id}.
type aiChat struct {
	ID       string        `json:"id"`
	Messages []aiUIMessage `json:"messages"`
}

// aiUIMessage is a UIMessage of the AI SDK, as it is stored by apps.
type aiUIMessage struct {
	ID       string      `json:"id"`
	Role     string      `json:"role"`
	Metadata *aiMetadata `json:"metadata,omitempty"`
	Parts    []aiUIPart  `json:"parts"`
	turnID   string      // a user message's turn, for placing edits (aiTarget)
}

// aiUIPart is a part of a UIMessage: text, step-start or a tool part.
type aiUIPart struct {
	Type       string            `json:"type"`
	Text       *string           `json:"text,omitempty"`
	State      string            `json:"state,omitempty"`
	ToolCallID string            `json:"toolCallId,omitempty"`
	Input      json.RawMessage   `json:"input,omitempty"`
	Output     *string           `json:"output,omitempty"`
	ErrorText  *string           `json:"errorText,omitempty"`
	Approval   *aiStoredApproval `json:"approval,omitempty"`
}

type aiStoredApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// aiMetadata is an assistant message's metadata: the model that answered,
// the turn's token usage, how it ended (status, with error or notice when
// it did not end well) and, once it has ended, how long it ran. A turn
// paused on approvals has status "awaiting_approval" and no durationMs; a
// turn still running (reloaded mid-stream) has neither.
type aiMetadata struct {
	Model      string                `json:"model,omitempty"`
	Usage      transcript.Usage      `json:"usage"`
	DurationMs *int64                `json:"durationMs,omitempty"`
	Status     transcript.Status     `json:"status,omitempty"`
	Error      *transcript.ErrorInfo `json:"error,omitempty"`
	Notice     string                `json:"notice,omitempty"`
}

// resultMetadata is the metadata of the message a turn's Result ends.
func resultMetadata(res *spool.Result) *aiMetadata {
	m := &aiMetadata{Model: res.Model, Usage: res.Usage, Status: res.Status, Error: res.Error, Notice: res.Notice}
	if res.Status != spool.StatusAwaitingApproval {
		m.DurationMs = &res.DurationMs
	}
	return m
}

// handleAIChatLoad is GET /api/chat/{id}.
func (s *Server) handleAIChatLoad(w http.ResponseWriter, r *http.Request) {
	ctx, sess, ok := s.existing(w, r)
	if !ok {
		return
	}
	entries, err := sess.Transcript(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, aiChat{ID: sess.ID(), Messages: uiMessages(entries)})
}

// uiMessages turns a transcript into the UIMessages of its active branch.
func uiMessages(entries []transcript.Entry) []aiUIMessage {
	br := &history.Branches{}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Type == transcript.TypeBranch {
			br.Add(i, entries[i])
		}
	}
	out := []aiUIMessage{}
	userIDs := map[string]bool{} // the ids of the user messages in out
	cur := -1                    // the assistant message of the turn being read, in out
	var tools map[string]int     // its tool parts by call id
	// Its calls recorded without an id (see history.CallID), in order:
	// their parts, whether each has had its result, and the part of each
	// approval asked for one, and the part of the decision recorded last
	// (-1 for none), until a result: the agent records a decision's result
	// right after it, and it answers that call (as the history pairs it),
	// whatever the order the calls were decided in.
	var (
		unnamed  []int
		answered map[int]bool
		asked    map[string]int
		decided  = -1
	)
	answer := func(turnID string) *aiUIMessage {
		if cur < 0 || out[cur].ID != turnID {
			out = append(out, aiUIMessage{ID: turnID, Role: "assistant", Parts: []aiUIPart{}, Metadata: &aiMetadata{}})
			cur, tools = len(out)-1, map[string]int{}
			unnamed, answered, asked, decided = nil, map[int]bool{}, map[string]int{}, -1
		}
		return &out[cur]
	}
	// part is the tool part of call id in the current answer, or nil.
	part := func(id string) *aiUIPart {
		if j, ok := tools[id]; ok && cur >= 0 {
			return &out[cur].Parts[j]
		}
		return nil
	}
	// firstUnnamed is the first part of a call without an id, of tool (any
	// when empty), for which ok holds: what an approval or a result
	// without a callId answers, as the history pairs them.
	firstUnnamed := func(tool string, ok func(j int, p *aiUIPart) bool) (int, *aiUIPart) {
		if cur < 0 {
			return -1, nil
		}
		for _, j := range unnamed {
			p := &out[cur].Parts[j]
			if (tool == "" || p.Type == "tool-"+tool) && ok(j, p) {
				return j, p
			}
		}
		return -1, nil
	}
	for i, e := range entries {
		if !br.ActiveFrom(e.TurnID, i) {
			continue
		}
		switch e.Type {
		case transcript.TypeUserMessage:
			var d transcript.UserMessage
			if e.DecodeData(&d) != nil {
				continue
			}
			text := d.Text
			// The client's id, unless a client reused one: ids in a
			// UIMessage list are unique.
			id := d.ClientID
			if id == "" || userIDs[id] {
				id = e.ID
			}
			userIDs[id] = true
			out = append(out, aiUIMessage{ID: id, Role: "user", Parts: []aiUIPart{{Type: "text", Text: &text}}, turnID: e.TurnID})
			cur = -1
		case transcript.TypeAssistantMessage:
			var d transcript.AssistantMessage
			if e.DecodeData(&d) != nil {
				continue
			}
			m := answer(e.TurnID)
			m.Parts = append(m.Parts, aiUIPart{Type: "step-start"})
			if d.Text != "" {
				text := d.Text
				m.Parts = append(m.Parts, aiUIPart{Type: "text", Text: &text, State: "done"})
			}
			for j, c := range d.ToolCalls {
				id := c.ID
				if id == "" {
					id = history.CallID(e.ID, j)
					unnamed = append(unnamed, len(m.Parts))
				}
				tools[id] = len(m.Parts)
				m.Parts = append(m.Parts, aiUIPart{Type: "tool-" + c.Name, ToolCallID: id, State: "input-available", Input: toolInput(c.Arguments)})
			}
			if d.Model != "" {
				m.Metadata.Model = d.Model
			}
			if d.Usage != nil {
				m.Metadata.Usage = m.Metadata.Usage.Add(*d.Usage)
			}
		case transcript.TypeApprovalRequest:
			var d transcript.ApprovalRequest
			if e.DecodeData(&d) != nil {
				continue
			}
			p := part(d.CallID)
			if d.CallID == "" {
				var j int
				j, p = firstUnnamed(d.Tool, func(_ int, p *aiUIPart) bool { return p.Approval == nil })
				asked[d.ApprovalID] = j
			}
			if p != nil {
				p.State, p.Approval = "approval-requested", &aiStoredApproval{ID: d.ApprovalID}
			}
		case transcript.TypeApprovalDecision:
			var d transcript.ApprovalDecision
			if e.DecodeData(&d) != nil {
				continue
			}
			p := part(d.CallID)
			decided = -1
			if j, ok := asked[d.ApprovalID]; d.CallID == "" && ok && j >= 0 {
				p, decided = &out[cur].Parts[j], j
			}
			if p != nil && p.Approval != nil {
				allowed := d.Decision == transcript.VerdictAllow
				p.State, p.Approval.Approved, p.Approval.Reason = "approval-responded", &allowed, d.Reason
				if !allowed {
					p.State = "output-denied"
				}
			}
		case transcript.TypeToolResult:
			var d transcript.ToolResult
			if e.DecodeData(&d) != nil {
				continue
			}
			p := part(d.CallID)
			if d.CallID == "" {
				j := decided
				if j >= 0 && cur >= 0 && (d.Tool == "" || out[cur].Parts[j].Type == "tool-"+d.Tool) {
					p = &out[cur].Parts[j]
				} else {
					j, p = firstUnnamed(d.Tool, func(j int, _ *aiUIPart) bool { return !answered[j] })
				}
				answered[j] = true
			}
			decided = -1
			if p == nil || p.State == "output-denied" {
				continue
			}
			result := d.Result
			if d.IsError {
				p.State, p.ErrorText = "output-error", &result
			} else {
				p.State, p.Output = "output-available", &result
			}
		case transcript.TypeGovernanceNotice:
			var d transcript.GovernanceNotice
			if e.DecodeData(&d) != nil {
				continue
			}
			answer(e.TurnID).Metadata.Notice = d.Message
		case transcript.TypeTurnEnd:
			var d transcript.TurnEnd
			if e.DecodeData(&d) != nil {
				continue
			}
			m := answer(e.TurnID)
			md := m.Metadata
			md.Usage, md.DurationMs, md.Status, md.Error = d.Usage, &d.DurationMs, e.Status, d.Error
			if e.Status == transcript.StatusResponseBlocked {
				// A guard stopped the answer: the model never sees it
				// again (history rule 3), and neither does the reload.
				dropText(m)
			}
		}
	}
	for i := range out {
		if md := out[i].Metadata; md != nil && md.Status == "" && awaiting(out[i]) {
			md.Status = spool.StatusAwaitingApproval
		}
	}
	return out
}

// awaiting reports whether a message has a call waiting on a person.
func awaiting(m aiUIMessage) bool {
	for _, p := range m.Parts {
		if p.State == "approval-requested" {
			return true
		}
	}
	return false
}

// toolInput is a call's arguments as the input of its tool part (a
// model that wrote no arguments called with none).
func toolInput(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	return args
}

// dropText removes the text parts of m.
func dropText(m *aiUIMessage) {
	parts := m.Parts[:0]
	for _, p := range m.Parts {
		if p.Type != "text" {
			parts = append(parts, p)
		}
	}
	m.Parts = parts
}
