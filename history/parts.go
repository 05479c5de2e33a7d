package history

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/spool-go/spool/transcript"
)

// part is what messages show of one entry's data, decoded once: the parts
// of the data the rules use, which spares the strings of the fields they
// leave out (model, durations, and the tool of a result paired by its
// callId).
type part struct {
	text        string                // a user or assistant message's text; a tool result's content
	calls       []transcript.ToolCall // an assistant message's calls
	callID      string                // a tool result's, a decision's or an approval request's call
	tool        string                // a tool result's or an approval request's tool, kept only when it has no callID
	deny        bool                  // a decision that denies its call (and decodes)
	reason      string                // a denial's reason
	approvalID  string                // an approval request's or decision's id
	hasApproval bool                  // approvalID was found: a string, not empty
	branch      *transcript.Branch    // a session.branch marker's turns; nil when it names none
	summary     *summaryPart          // a session.compaction's summary and turns; nil when it names none
}

// The shapes the parts are decoded from.
type (
	assistantData struct {
		Text      string                `json:"text"`
		ToolCalls []transcript.ToolCall `json:"toolCalls"`
	}
	toolResultData struct {
		CallID  string `json:"callId"`
		Result  string `json:"result"`
		IsError bool   `json:"isError"`
	}
	decisionData struct {
		CallID   string             `json:"callId"`
		Decision transcript.Verdict `json:"decision"`
		Reason   string             `json:"reason"`
	}
	approvalData struct {
		ApprovalID string `json:"approvalId"`
	}
)

// part returns the decoded data of entry i. What does not decode stays
// empty: a user message whose text is not a string is an empty message.
func (b *Builder) part(i int) *part {
	if p := b.parts[i]; p != nil {
		return p
	}
	e := &b.entries[i]
	p := &part{}
	switch e.Type {
	case transcript.TypeUserMessage:
		u, ok := fastUser(e.Data)
		if !ok {
			u = transcript.UserMessage{}
			_ = json.Unmarshal(e.Data, &u)
		}
		p.text = u.Text
	case transcript.TypeAssistantMessage:
		a, ok := fastAssistant(e.Data)
		if !ok {
			a = assistantData{}
			_ = json.Unmarshal(e.Data, &a)
		}
		p.text, p.calls = a.Text, a.ToolCalls
	case transcript.TypeToolResult:
		r, ok := fastToolResult(e.Data)
		if !ok {
			r = toolResultData{}
			_ = json.Unmarshal(e.Data, &r)
		}
		p.callID, p.text = r.CallID, resultContent(r.Result, r.IsError)
		if r.CallID == "" {
			p.tool = resultTool(e.Data)
		}
	case transcript.TypeApprovalDecision:
		d, ok := fastDecision(e.Data)
		if !ok {
			d = decisionData{}
			ok = json.Unmarshal(e.Data, &d) == nil
		}
		if ok && d.Decision == transcript.VerdictDeny {
			p.deny, p.callID, p.reason = true, d.CallID, d.Reason
		}
		p.approvalID, p.hasApproval = approvalID(e.Data)
	case transcript.TypeApprovalRequest:
		p.approvalID, p.hasApproval = approvalID(e.Data)
		p.callID, p.tool = requestCall(e.Data)
	case transcript.TypeBranch:
		p.branch = decodeBranch(e.Data)
	case transcript.TypeCompaction:
		p.summary = decodeCompaction(e.Data)
	}
	b.parts[i] = p
	return p
}

// approvalID returns the approval id of entry i (decoded once), and false
// when there is none.
func (b *Builder) approvalID(i int) (string, bool) {
	p := b.part(i)
	return p.approvalID, p.hasApproval
}

// resultTool returns the tool of tool result data, read only for a
// result without a callId (see resultOf): the others are paired by their
// call's id.
func resultTool(data []byte) string {
	var tool string
	if fields(data, []string{"tool"}, []func(*scan) bool{readString(&tool)}) {
		return tool
	}
	var d struct {
		Tool string `json:"tool"`
	}
	_ = json.Unmarshal(data, &d)
	return d.Tool
}

// requestCall returns the callId of approval request data and, when it
// has none, its tool: a request for a call without an id is paired with
// the call by its tool (see turn).
func requestCall(data []byte) (callID, tool string) {
	var d struct {
		CallID string `json:"callId"`
		Tool   string `json:"tool"`
	}
	if !fields(data, []string{"callId", "tool"}, []func(*scan) bool{readString(&d.CallID), readString(&d.Tool)}) {
		d.CallID, d.Tool = "", ""
		_ = json.Unmarshal(data, &d)
	}
	if d.CallID != "" {
		return d.CallID, ""
	}
	return "", d.Tool
}

// resultContent is what the tool message of a result says: a failed call's
// result is marked, so the model knows the call failed.
func resultContent(result string, isError bool) string {
	if isError {
		return "error: " + result
	}
	return result
}

// partFromData returns the part of an entry of type typ made from data,
// the value its data was encoded from, or nil when data cannot stand in
// for decoding: another type, or a value whose JSON would read back
// differently (text that is not valid UTF-8, tool calls whose arguments
// encoding compacts).
func partFromData(typ transcript.Type, data any) *part {
	switch d := data.(type) {
	case *transcript.UserMessage:
		return partFromData(typ, *d)
	case *transcript.AssistantMessage:
		return partFromData(typ, *d)
	case *transcript.ToolResult:
		return partFromData(typ, *d)
	case *transcript.ApprovalDecision:
		return partFromData(typ, *d)
	case *transcript.ApprovalRequest:
		return partFromData(typ, *d)
	case transcript.UserMessage:
		if typ == transcript.TypeUserMessage && utf8.ValidString(d.Text) {
			return &part{text: d.Text}
		}
	case transcript.AssistantMessage:
		if typ == transcript.TypeAssistantMessage && len(d.ToolCalls) == 0 && utf8.ValidString(d.Text) {
			return &part{text: d.Text}
		}
	case transcript.ToolResult:
		if typ == transcript.TypeToolResult && utf8.ValidString(d.CallID) && utf8.ValidString(d.Result) && utf8.ValidString(d.Tool) {
			p := &part{callID: d.CallID, text: resultContent(d.Result, d.IsError)}
			if d.CallID == "" {
				p.tool = d.Tool
			}
			return p
		}
	case transcript.ApprovalDecision:
		if typ == transcript.TypeApprovalDecision && utf8.ValidString(d.ApprovalID) && utf8.ValidString(d.CallID) &&
			utf8.ValidString(string(d.Decision)) && utf8.ValidString(d.Reason) {
			p := &part{approvalID: d.ApprovalID, hasApproval: d.ApprovalID != ""}
			if d.Decision == transcript.VerdictDeny {
				p.deny, p.callID, p.reason = true, d.CallID, d.Reason
			}
			return p
		}
	case transcript.ApprovalRequest:
		if typ == transcript.TypeApprovalRequest && utf8.ValidString(d.ApprovalID) && utf8.ValidString(d.CallID) && utf8.ValidString(d.Tool) {
			p := &part{approvalID: d.ApprovalID, hasApproval: d.ApprovalID != "", callID: d.CallID}
			if d.CallID == "" {
				p.tool = d.Tool
			}
			return p
		}
	case *transcript.Compaction:
		return partFromData(typ, *d)
	case transcript.Compaction:
		if typ == transcript.TypeCompaction && d.FirstTurn != "" && d.LastTurn != "" &&
			validStrings([]string{d.Summary, d.FirstTurn, d.LastTurn}) {
			return &part{summary: &summaryPart{text: d.Summary, first: d.FirstTurn, last: d.LastTurn}}
		}
	case *transcript.Branch:
		return partFromData(typ, *d)
	case transcript.Branch:
		if typ == transcript.TypeBranch && validStrings(d.Supersedes) && validStrings(d.Restores) {
			return &part{branch: &transcript.Branch{Supersedes: d.Supersedes, Restores: d.Restores}}
		}
	}
	return nil
}

func validStrings(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// decodeBranch returns the turns a session.branch entry's data names, or
// nil when it names none (or does not decode: a marker that cannot be
// read changes nothing).
func decodeBranch(data []byte) *transcript.Branch {
	var d struct {
		Supersedes []string `json:"supersedes"`
		Restores   []string `json:"restores"`
	}
	if json.Unmarshal(data, &d) != nil || len(d.Supersedes)+len(d.Restores) == 0 {
		return nil
	}
	return &transcript.Branch{Supersedes: d.Supersedes, Restores: d.Restores}
}
