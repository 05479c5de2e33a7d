package history_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/transcript"
)

// A short session: a tool turn, a question whose answer a guard stopped,
// and the current turn's question. The stopped turn keeps only its
// question, which merges with the next one.
func ExampleBuild() {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var entries []transcript.Entry
	add := func(turn string, typ transcript.Type, status transcript.Status, data any) {
		e, err := transcript.New(now, typ, turn, data)
		if err != nil {
			panic(err)
		}
		e.Status = status
		entries = append(entries, e)
	}
	add("T1", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "Where is order 1042?"})
	add("T1", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
		{ID: "c1", Name: "lookup_order", Arguments: json.RawMessage(`{"order":1042}`)},
	}})
	add("T1", transcript.TypeToolResult, "", transcript.ToolResult{CallID: "c1", Tool: "lookup_order", Result: "shipped Monday"})
	add("T1", transcript.TypeAssistantMessage, "", transcript.AssistantMessage{Text: "It shipped on Monday."})
	add("T1", transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{})
	add("T2", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "Who packed it?"})
	add("T2", transcript.TypeGovernanceNotice, "", transcript.GovernanceNotice{Kind: transcript.NoticeResponseStopped})
	add("T2", transcript.TypeTurnEnd, transcript.StatusResponseBlocked, transcript.TurnEnd{})
	add("T3", transcript.TypeUserMessage, "", transcript.UserMessage{Text: "When will it arrive?"})

	for _, m := range history.Build(entries, history.Options{Instructions: "You are a support agent."}) {
		line, _ := json.Marshal(m)
		fmt.Println(string(line))
	}
	// Output:
	// {"role":"system","content":"You are a support agent."}
	// {"role":"user","content":"Where is order 1042?"}
	// {"role":"assistant","content":"","toolCalls":[{"id":"c1","name":"lookup_order","arguments":{"order":1042}}]}
	// {"role":"tool","content":"shipped Monday","toolCallId":"c1"}
	// {"role":"assistant","content":"It shipped on Monday."}
	// {"role":"user","content":"Who packed it?\n\nWhen will it arrive?"}
}

// The approval requests still waiting on a person.
func ExamplePendingApprovals() {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	req, _ := transcript.New(now, transcript.TypeApprovalRequest, "T1", transcript.ApprovalRequest{
		ApprovalID: "a1", CallID: "c1", Tool: "refund_order", Arguments: json.RawMessage(`{"order":1042}`),
	})
	for _, r := range history.PendingApprovals([]transcript.Entry{req}) {
		fmt.Println(r.ApprovalID, r.Tool, string(r.Arguments))
	}
	// Output:
	// a1 refund_order {"order":1042}
}
