package server

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/transcript"
)

// TestUIMessagesTurnEnds: how each end of a turn reloads, as the model
// will see it: a refused prompt has an answer with no parts and the
// notice, a stopped answer loses its text (history rule 3), a failed
// turn keeps what it said with the error, a call whose arguments a model
// wrote as text has them as a string, and a turn still running has no
// status.
func TestUIMessagesTurnEnds(t *testing.T) {
	now := time.Now()
	var entries []transcript.Entry
	add := func(typ transcript.Type, turn string, status transcript.Status, data any) {
		e, err := transcript.New(now, typ, turn, data)
		if err != nil {
			t.Fatal(err)
		}
		e.Status = status
		entries = append(entries, e)
	}
	add(transcript.TypeUserMessage, "t1", "", transcript.UserMessage{Text: "bad"})
	add(transcript.TypeGovernanceNotice, "t1", "", transcript.GovernanceNotice{Kind: transcript.NoticePromptRefused, Message: "refused"})
	add(transcript.TypeTurnEnd, "t1", transcript.StatusPromptBlocked, transcript.TurnEnd{})
	add(transcript.TypeUserMessage, "t2", "", transcript.UserMessage{Text: "q2"})
	add(transcript.TypeAssistantMessage, "t2", "", transcript.AssistantMessage{Text: "secret", Model: "m"})
	add(transcript.TypeGovernanceNotice, "t2", "", transcript.GovernanceNotice{Kind: transcript.NoticeResponseStopped, Message: "stopped"})
	add(transcript.TypeTurnEnd, "t2", transcript.StatusResponseBlocked, transcript.TurnEnd{DurationMs: 7})
	add(transcript.TypeUserMessage, "t3", "", transcript.UserMessage{Text: "q3"})
	add(transcript.TypeAssistantMessage, "t3", "", transcript.AssistantMessage{Text: "half", Model: "m",
		ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"a":1}`)}}})
	add(transcript.TypeTurnEnd, "t3", transcript.StatusError, transcript.TurnEnd{Usage: transcript.Usage{InputTokens: 2, OutputTokens: 3}, DurationMs: 9,
		Error: &transcript.ErrorInfo{Code: transcript.CodeModelError, Message: "boom"}})
	add(transcript.TypeUserMessage, "t4", "", transcript.UserMessage{Text: "q4"})
	add(transcript.TypeAssistantMessage, "t4", "", transcript.AssistantMessage{Model: "m", Usage: &transcript.Usage{InputTokens: 1, OutputTokens: 1},
		ToolCalls: []transcript.ToolCall{{ID: "c2", Name: "y", Arguments: json.RawMessage(`"not json"`)}}})

	b, err := json.Marshal(uiMessages(entries))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	json.Unmarshal(b, &got)
	want := []string{
		`{"parts":[{"text":"bad","type":"text"}],"role":"user"}`,
		`{"id":"t1","metadata":{"notice":"refused","status":"prompt_blocked","durationMs":0,"usage":{"inputTokens":0,"outputTokens":0}},"parts":[],"role":"assistant"}`,
		`{"parts":[{"text":"q2","type":"text"}],"role":"user"}`,
		`{"id":"t2","metadata":{"model":"m","notice":"stopped","status":"response_blocked","durationMs":7,"usage":{"inputTokens":0,"outputTokens":0}},"parts":[{"type":"step-start"}],"role":"assistant"}`,
		`{"parts":[{"text":"q3","type":"text"}],"role":"user"}`,
		`{"id":"t3","metadata":{"durationMs":9,"error":{"code":"model_error","message":"boom"},"model":"m","status":"error","usage":{"inputTokens":2,"outputTokens":3}},"parts":[{"type":"step-start"},{"state":"done","text":"half","type":"text"},{"input":{"a":1},"state":"input-available","toolCallId":"c1","type":"tool-x"}],"role":"assistant"}`,
		`{"parts":[{"text":"q4","type":"text"}],"role":"user"}`,
		`{"id":"t4","metadata":{"model":"m","usage":{"inputTokens":1,"outputTokens":1}},"parts":[{"type":"step-start"},{"input":"not json","state":"input-available","toolCallId":"c2","type":"tool-y"}],"role":"assistant"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages: %s", len(got), b)
	}
	for i, w := range want {
		if got[i]["role"] == "user" {
			delete(got[i], "id") // the entry's id
		}
		var wm map[string]any
		if err := json.Unmarshal([]byte(w), &wm); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got[i])
		ww, _ := json.Marshal(wm)
		if string(g) != string(ww) {
			t.Errorf("message %d:\n got %s\nwant %s", i, g, ww)
		}
	}
}

// TestUIMessagesCallsWithoutIDs: a session recorded with tool calls that
// have no id (an OpenAI-compatible server that streamed none, before the
// openai package gave them one) reloads with a part for each call, named
// as the history names it, each with its own result: the call that waited
// on its approval is answered after the one that ran at once. (Every such
// call was filed under the empty id: one part took the approval and every
// result, the others none.)
func TestUIMessagesCallsWithoutIDs(t *testing.T) {
	var entries []transcript.Entry
	add := turnLog(t, &entries)
	add(transcript.TypeUserMessage, "", transcript.UserMessage{Text: "save milk and eggs, and the time?"})
	asst := add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
		{Name: "save", Arguments: json.RawMessage(`{"text":"milk"}`)},
		{Name: "local_time", Arguments: json.RawMessage(`{}`)},
		{Name: "save", Arguments: json.RawMessage(`{"text":"eggs"}`)},
	}})
	add(transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "a1", Tool: "save", Arguments: json.RawMessage(`{"text":"milk"}`)})
	add(transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "a2", Tool: "save", Arguments: json.RawMessage(`{"text":"eggs"}`)})
	add(transcript.TypeToolResult, "", transcript.ToolResult{Tool: "local_time", Result: "noon"})
	add(transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "a1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
	add(transcript.TypeToolResult, "", transcript.ToolResult{Tool: "save", Result: "saved milk"})
	add(transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "a2", Decision: transcript.VerdictDeny, Scope: transcript.ApprovalScopeOnce, Reason: "no eggs"})
	add(transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{})

	got := toolParts(t, entries)
	want := []string{
		"tool-save " + history.CallID(asst.ID, 0) + " output-available saved milk a1 approved=true",
		"tool-local_time " + history.CallID(asst.ID, 1) + " output-available noon",
		"tool-save " + history.CallID(asst.ID, 2) + " output-denied a2 approved=false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the tool parts:\n got %q\nwant %q", got, want)
	}
}

// TestUIMessagesCallsWithoutIDsDecidedOutOfOrder: two calls without an id
// of one tool wait on approvals, and the second is decided first (denied),
// then the first (allowed). The agent records each decision with its
// call's result right after it: the denial's result is the second call's,
// and the run's the first's, as the history sends them. (Results went to
// the first call of the tool without one: the allowed call showed the
// denial, and its own result was dropped on the denied call.)
func TestUIMessagesCallsWithoutIDsDecidedOutOfOrder(t *testing.T) {
	var entries []transcript.Entry
	add := turnLog(t, &entries)
	add(transcript.TypeUserMessage, "", transcript.UserMessage{Text: "save milk and eggs"})
	asst := add(transcript.TypeAssistantMessage, "", transcript.AssistantMessage{ToolCalls: []transcript.ToolCall{
		{Name: "save", Arguments: json.RawMessage(`{"text":"milk"}`)},
		{Name: "save", Arguments: json.RawMessage(`{"text":"eggs"}`)},
	}})
	add(transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "a1", Tool: "save", Arguments: json.RawMessage(`{"text":"milk"}`)})
	add(transcript.TypeApprovalRequest, "", transcript.ApprovalRequest{ApprovalID: "a2", Tool: "save", Arguments: json.RawMessage(`{"text":"eggs"}`)})
	add(transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "a2", Decision: transcript.VerdictDeny, Scope: transcript.ApprovalScopeOnce, Reason: "no eggs"})
	add(transcript.TypeToolResult, "", transcript.ToolResult{Tool: "save", Result: "the user denied this call: no eggs", IsError: true})
	add(transcript.TypeApprovalDecision, "", transcript.ApprovalDecision{ApprovalID: "a1", Decision: transcript.VerdictAllow, Scope: transcript.ApprovalScopeOnce})
	add(transcript.TypeToolResult, "", transcript.ToolResult{Tool: "save", Result: "saved milk"})
	add(transcript.TypeTurnEnd, transcript.StatusOK, transcript.TurnEnd{})

	got := toolParts(t, entries)
	want := []string{
		"tool-save " + history.CallID(asst.ID, 0) + " output-available saved milk a1 approved=true",
		"tool-save " + history.CallID(asst.ID, 1) + " output-denied a2 approved=false",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the tool parts:\n got %q\nwant %q", got, want)
	}
}

// turnLog returns a function that adds an entry of turn t1, with the
// status given, to *entries and returns it.
func turnLog(t *testing.T, entries *[]transcript.Entry) func(transcript.Type, transcript.Status, any) transcript.Entry {
	now := time.Now()
	return func(typ transcript.Type, status transcript.Status, data any) transcript.Entry {
		e, err := transcript.New(now, typ, "t1", data)
		if err != nil {
			t.Fatal(err)
		}
		e.Status = status
		*entries = append(*entries, e)
		return e
	}
}

// toolParts describes the tool parts of the answer of a one-turn session:
// each part's type, call id and state, its output or error, and its
// approval.
func toolParts(t *testing.T, entries []transcript.Entry) []string {
	t.Helper()
	msgs := uiMessages(entries)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	var got []string
	for _, p := range msgs[1].Parts {
		if p.Type == "step-start" {
			continue
		}
		s := fmt.Sprintf("%s %s %s", p.Type, p.ToolCallID, p.State)
		if p.Output != nil {
			s += " " + *p.Output
		}
		if p.ErrorText != nil {
			s += " error=" + *p.ErrorText
		}
		if p.Approval != nil {
			s += " " + p.Approval.ID
			if p.Approval.Approved != nil {
				s += fmt.Sprint(" approved=", *p.Approval.Approved)
			}
		}
		got = append(got, s)
	}
	return got
}

// TestUIMessagesUserIDs: a user message reloads under the id its client
// gave it (clientId), one written without it (an older transcript) under
// its entry id as before, and one whose client reused an id already in the
// list under its entry id too: the ids of a UIMessage list are unique.
func TestUIMessagesUserIDs(t *testing.T) {
	now := time.Now()
	var entries []transcript.Entry
	for i, d := range []transcript.UserMessage{{Text: "old"}, {Text: "named", ClientID: "c1"}, {Text: "again", ClientID: "c1"}} {
		e, err := transcript.New(now, transcript.TypeUserMessage, fmt.Sprint("t", i), d)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	var got []string
	for _, m := range uiMessages(entries) {
		got = append(got, m.ID)
	}
	want := []string{entries[0].ID, "c1", entries[2].ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
}
