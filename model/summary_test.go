package model_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// TestSummaryRequest: what NewSummaryRequest writes, ReadSummaryRequest
// reads back: the summary so far and every user message, multi-line ones
// whole; tool calls and results are lines of text, so the request has no
// tool message and needs no tool definition.
func TestSummaryRequest(t *testing.T) {
	msgs := []model.Message{
		{Role: model.RoleUser, Content: "Where is order 1042?\nIt is urgent."},
		{Role: model.RoleAssistant, ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "track", Arguments: json.RawMessage(`{"order":1042}`)}}},
		{Role: model.RoleTool, ToolCallID: "c1", Content: "in Lyon"},
		{Role: model.RoleAssistant, Content: "It is in Lyon."},
		{Role: model.RoleUser, Content: "Thanks."},
	}
	req := model.NewSummaryRequest("", "The user is Ana.", msgs)
	if len(req.Messages) != 2 || req.Messages[0].Content != model.SummaryInstructions || len(req.Tools) != 0 {
		t.Fatalf("request %+v", req)
	}
	for _, want := range []string{"assistant called track({\"order\":1042})", "tool result: in Lyon", "assistant: It is in Lyon."} {
		if !strings.Contains(req.Messages[1].Content, want) {
			t.Errorf("request text lacks %q:\n%s", want, req.Messages[1].Content)
		}
	}
	prev, users, ok := model.ReadSummaryRequest(req)
	if !ok || prev != "The user is Ana." || !reflect.DeepEqual(users, []string{"Where is order 1042?\nIt is urgent.", "Thanks."}) {
		t.Fatalf("read back %q %q %v", prev, users, ok)
	}
	if prev, _, ok := model.ReadSummaryRequest(model.NewSummaryRequest("", "", msgs)); !ok || prev != "" {
		t.Errorf("no summary so far read back as %q, %v", prev, ok)
	}
	if _, _, ok := model.ReadSummaryRequest(model.NewSummaryRequest("Be short.", "", msgs)); ok {
		t.Error("a request with other instructions read as the default summary request")
	}
	if _, _, ok := model.ReadSummaryRequest(&model.Request{Messages: msgs}); ok {
		t.Error("a plain request read as a summary request")
	}
}

// FuzzReadSummaryRequest: any user text reads without panicking, and the
// summary so far written is the one read.
func FuzzReadSummaryRequest(f *testing.F) {
	f.Add("prev", "hello\n  there")
	f.Add("", "Turns to fold into it:\nuser: x")
	f.Fuzz(func(t *testing.T, prev, text string) {
		req := model.NewSummaryRequest("", prev, []model.Message{{Role: model.RoleUser, Content: text}})
		got, _, ok := model.ReadSummaryRequest(req)
		if !ok {
			t.Fatal("not read")
		}
		_ = got
		raw := &model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: model.SummaryInstructions}, {Role: model.RoleUser, Content: text}}}
		model.ReadSummaryRequest(raw)
	})
}
