package history

import (
	"encoding/json"

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

// unit returns, for the anchor k, the anchor of the unit before it (or -1)
// and whether the unit holds a turn waiting on an approval.
func (s *turnSet) unit(k int) (prev int, waiting bool) {
	waiting = s.turns[k].waiting
	prev = s.prevKept(k)
	for prev >= 0 && s.turns[prev].onlyUser(s.entries) {
		waiting = waiting || s.turns[prev].waiting
		prev = s.prevKept(prev)
	}
	return prev, waiting
}

// builder renders units into acc, one after another.
type builder struct {
	s       *turnSet
	acc     []model.Message
	start   int // where the unit being rendered begins in acc
	results []toolResult
	denials []denial
}

// The parts of entry data that messages show; decoding only these spares
// the strings of the fields they leave out (model, tool, durations).
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
)

type toolResult struct {
	callID, content string
	used            bool
}

type denial struct {
	callID, reason string
}

// render appends the messages of the unit anchored at k, whose previous
// anchor is prev, and returns how many it appended.
func (b *builder) render(k, prev int) int {
	s := b.s
	b.start = len(b.acc)
	if prev >= 0 && s.turns[prev].endsWithUser(s.entries) {
		b.users(prev, s.turns[prev].lastAsst)
	}
	for m := prev + 1; m < k; m++ {
		if s.turns[m].kept {
			b.users(m, -1)
		}
	}
	t := &s.turns[k]
	switch {
	case t.onlyUser(s.entries):
		b.users(k, -1)
	case k == s.newest:
		b.turn(k, int32(len(s.entries)))
	default:
		b.turn(k, t.lastAsst) // its trailing questions open the next unit
	}
	return len(b.acc) - b.start
}

// users appends the user messages of turn k that come after position from.
func (b *builder) users(k int, from int32) {
	for i := range b.s.positions(k) {
		if e := &b.s.entries[i]; i > int(from) && e.Type == transcript.TypeUserMessage {
			b.user(e.Data)
		}
	}
}

// user appends a user message, merged into the previous one when that is a
// user message of the same unit (rule 5).
func (b *builder) user(data json.RawMessage) {
	var u transcript.UserMessage
	_ = json.Unmarshal(data, &u) // what does not decode stays empty
	if n := len(b.acc); n > b.start && b.acc[n-1].Role == model.RoleUser {
		b.acc[n-1].Content += "\n\n" + u.Text
		return
	}
	b.acc = append(b.acc, model.Message{Role: model.RoleUser, Content: u.Text})
}

// turn appends the messages of an ok or open turn (rule 4), leaving out its
// user messages after position until.
func (b *builder) turn(k int, until int32) {
	s := b.s
	b.results, b.denials = b.results[:0], b.denials[:0]
	for i := range s.positions(k) {
		e := &s.entries[i]
		switch e.Type {
		case transcript.TypeToolResult:
			var r toolResultData
			_ = json.Unmarshal(e.Data, &r)
			content := r.Result
			if r.IsError {
				content = "error: " + r.Result
			}
			b.results = append(b.results, toolResult{callID: r.CallID, content: content})
		case transcript.TypeApprovalDecision:
			var d decisionData
			if json.Unmarshal(e.Data, &d) == nil && d.Decision == transcript.VerdictDeny {
				b.denials = append(b.denials, denial{callID: d.CallID, reason: d.Reason})
			}
		}
	}
	ended := s.turns[k].ended()
	for i := range s.positions(k) {
		e := &s.entries[i]
		switch e.Type {
		case transcript.TypeUserMessage:
			if i <= int(until) {
				b.user(e.Data)
			}
		case transcript.TypeAssistantMessage:
			var a assistantData
			_ = json.Unmarshal(e.Data, &a)
			b.acc = append(b.acc, model.Message{Role: model.RoleAssistant, Content: a.Text, ToolCalls: a.ToolCalls})
			for _, c := range a.ToolCalls {
				if content, ok := b.resultOf(c.ID, ended); ok {
					b.acc = append(b.acc, model.Message{Role: model.RoleTool, Content: content, ToolCallID: c.ID})
				}
			}
		}
	}
}

// resultOf returns what the tool message answering call id says, and false
// when the call has no answer yet (it runs, or waits on a person).
func (b *builder) resultOf(id string, ended bool) (string, bool) {
	for i := range b.results {
		if r := &b.results[i]; !r.used && r.callID == id {
			r.used = true
			return r.content, true
		}
	}
	for _, d := range b.denials {
		if d.callID == id {
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
