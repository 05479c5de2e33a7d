package history

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// checkInvariants returns what is wrong with got = Build(entries, opt),
// judged by properties every history must have, whatever the transcript:
// the shape providers accept, and the window and budget limits.
func checkInvariants(entries []transcript.Entry, opt Options, got []model.Message) error {
	if got == nil {
		return fmt.Errorf("nil result")
	}
	msgs := got
	if opt.Instructions != "" {
		if len(got) == 0 || !reflect.DeepEqual(got[0], model.Message{Role: model.RoleSystem, Content: opt.Instructions}) {
			return fmt.Errorf("no system message in front: %v", got)
		}
		msgs = got[1:]
	}
	for i, m := range msgs {
		switch m.Role {
		case model.RoleUser, model.RoleAssistant, model.RoleTool:
		default:
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
		if m.Role != model.RoleAssistant && m.ToolCalls != nil {
			return fmt.Errorf("message %d: %s message with tool calls", i, m.Role)
		}
		if m.Role != model.RoleTool && m.ToolCallID != "" {
			return fmt.Errorf("message %d: %s message with a tool call id", i, m.Role)
		}
	}
	if len(msgs) > 0 && msgs[0].Role != model.RoleUser {
		return fmt.Errorf("history starts with a %s message", msgs[0].Role)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == model.RoleUser && msgs[i-1].Role == model.RoleUser {
			return fmt.Errorf("messages %d and %d are both user messages", i-1, i)
		}
	}
	if again := Build(entries, opt); !reflect.DeepEqual(again, got) {
		return fmt.Errorf("a second Build gave another history")
	}
	// The rules below judge the active branch (rule 11) with the turns a
	// compaction covers replaced by its summary (rule 10); that its
	// history is got is TestBranchesAreLinear's and
	// TestCompactionIsReplacement's.
	entries, _ = replaced(entries)
	if err := checkToolPairs(entries, msgs); err != nil {
		return err
	}
	if err := checkLimits(entries, opt, got, msgs); err != nil {
		return err
	}
	return checkSources(entries, msgs)
}

// checkToolPairs checks that every tool message answers a call of the
// assistant message right before it (past other tool messages), and that
// every call of a finished turn is answered there.
func checkToolPairs(entries []transcript.Entry, msgs []model.Message) error {
	ended := map[string]bool{}
	callTurns := map[string][]string{}
	for _, e := range entries {
		switch e.Type {
		case transcript.TypeTurnEnd:
			ended[e.TurnID] = true
		case transcript.TypeAssistantMessage:
			var a transcript.AssistantMessage
			_ = e.DecodeData(&a)
			for _, c := range a.ToolCalls {
				callTurns[c.ID] = append(callTurns[c.ID], e.TurnID)
			}
		}
	}
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Role == model.RoleTool {
			return fmt.Errorf("message %d: tool message %q without its call before it", i, msgs[i].ToolCallID)
		}
		if msgs[i].Role != model.RoleAssistant {
			continue
		}
		calls := msgs[i].ToolCalls
		answered := map[string]int{}
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == model.RoleTool; j++ {
			id := msgs[j].ToolCallID
			if !slices.ContainsFunc(calls, func(c transcript.ToolCall) bool { return c.ID == id }) {
				return fmt.Errorf("message %d: tool message for %q, which message %d did not call", j, id, i)
			}
			answered[id]++
		}
		for _, c := range calls {
			finished := len(callTurns[c.ID]) > 0
			for _, t := range callTurns[c.ID] {
				finished = finished && ended[t]
			}
			if finished && answered[c.ID] == 0 {
				return fmt.Errorf("message %d: call %q of a finished turn has no result after it", i, c.ID)
			}
			answered[c.ID]--
		}
		i = j - 1
	}
	return nil
}

// checkLimits checks rules 6 to 8 from the outside: the history is within
// the cap and the budget unless it is exactly the turns that are always
// sent (what a cap of 1 gives); with no turn waiting on an approval it is
// the newest part of the uncapped history; a larger cap never gives less.
func checkLimits(entries []transcript.Entry, opt Options, got, msgs []model.Message) error {
	alwaysOpt := opt
	alwaysOpt.MaxMessages = 1
	always := Build(entries, alwaysOpt)
	if c := opt.maxMessages(); c >= 0 && len(msgs) > c && !reflect.DeepEqual(got, always) {
		return fmt.Errorf("%d messages over a cap of %d, and not only the turns always sent", len(msgs), c)
	}
	if opt.Budget > 0 {
		tokens := 0
		for _, m := range got {
			tokens += opt.count(m)
		}
		if tokens > opt.Budget && !reflect.DeepEqual(got, always) {
			return fmt.Errorf("%d tokens over a budget of %d, and not only the turns always sent", tokens, opt.Budget)
		}
	}
	full := Build(entries, Options{MaxMessages: NoLimit})
	if len(full) == 0 && len(msgs) > 0 || len(full) > 0 && len(msgs) == 0 {
		return fmt.Errorf("%d messages, %d without cap or budget", len(msgs), len(full))
	}
	if len(PendingApprovals(entries)) == 0 {
		if len(msgs) > len(full) || !reflect.DeepEqual(msgs, full[len(full)-len(msgs):]) {
			return fmt.Errorf("not the newest part of the whole history")
		}
		if c := opt.maxMessages(); (c < 0 || c >= len(full)) && opt.Budget <= 0 && len(msgs) != len(full) {
			return fmt.Errorf("%d messages of %d, with room for all", len(msgs), len(full))
		}
	}
	if c := opt.maxMessages(); c >= 0 {
		more := opt
		more.MaxMessages = c + 1
		if n := len(Build(entries, more)); n < len(got) {
			return fmt.Errorf("a cap of %d gives %d messages, a cap of %d only %d", c, len(got), c+1, n)
		}
	}
	return nil
}

// checkSources checks rules 2, 3 and 8 where texts tell which entry a
// message came from (the fuzz transcripts give every entry its own text):
// nothing comes from a refused, failed or cancelled turn, only questions
// from a response_blocked one, and the step of an open turn that made a
// call now waiting on an approval is always sent.
func checkSources(entries []transcript.Entry, msgs []model.Message) error {
	status := map[string]transcript.Status{}
	ended := map[string]bool{}
	firstMsg := map[string]transcript.Type{}
	for _, e := range entries {
		switch e.Type {
		case transcript.TypeTurnEnd:
			status[e.TurnID], ended[e.TurnID] = e.Status, true
		case transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeToolResult:
			if _, ok := firstMsg[e.TurnID]; !ok {
				firstMsg[e.TurnID] = e.Type
			}
		}
	}
	type source struct {
		turn string
		typ  transcript.Type
	}
	from := map[string]source{}
	decided := map[string]bool{}
	for _, e := range entries {
		switch e.Type {
		case transcript.TypeUserMessage:
			var u transcript.UserMessage
			if e.DecodeData(&u) == nil && u.Text != "" {
				from[u.Text] = source{e.TurnID, e.Type}
			}
		case transcript.TypeAssistantMessage:
			var a transcript.AssistantMessage
			if e.DecodeData(&a) == nil && a.Text != "" {
				from[a.Text] = source{e.TurnID, e.Type}
			}
		case transcript.TypeApprovalDecision:
			if id, ok := approvalID(e.Data); ok {
				decided[id] = true
			}
		}
	}
	sent := map[string]bool{} // ids of the calls sent
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			sent[c.ID] = true
		}
		var parts []string
		switch m.Role {
		case model.RoleUser:
			parts = strings.Split(m.Content, "\n\n")
		case model.RoleAssistant:
			parts = []string{m.Content}
		}
		for _, p := range parts {
			src, ok := from[p]
			if !ok {
				continue
			}
			st, done := status[src.turn], ended[src.turn]
			if done && st != transcript.StatusOK && !(st == transcript.StatusResponseBlocked && src.typ == transcript.TypeUserMessage) {
				return fmt.Errorf("message %d: %q comes from turn %s, which ended %q", i, p, src.turn, st)
			}
		}
	}
	for _, e := range entries {
		if e.Type != transcript.TypeAssistantMessage || ended[e.TurnID] || firstMsg[e.TurnID] != transcript.TypeUserMessage {
			continue
		}
		var a transcript.AssistantMessage
		_ = e.DecodeData(&a)
		for _, c := range a.ToolCalls {
			for _, r := range entries {
				var req transcript.ApprovalRequest
				if r.Type != transcript.TypeApprovalRequest || r.TurnID != e.TurnID || r.DecodeData(&req) != nil {
					continue
				}
				if req.ApprovalID != "" && !decided[req.ApprovalID] && req.CallID == c.ID && c.ID != "" && !sent[c.ID] {
					return fmt.Errorf("call %q waits on approval %q in open turn %s, and is not sent", c.ID, req.ApprovalID, e.TurnID)
				}
			}
		}
	}
	return nil
}
