package openai_test

import (
	"context"
	"testing"

	"github.com/spool-go/spool/model"
)

// Some compatible servers (sglang for calls after the first, several
// hosted open-weight models) stream tool calls without an id. A call
// recorded without one cannot be answered: the next request's tool
// message would have no tool_call_id, and every later request of the
// session would fail. Such calls get an id of their own, distinct per
// call.
func TestCallsWithoutIDsGetOne(t *testing.T) {
	s := newServer(t, replay(t, "no_ids.sse"))
	m := newModel(t, s)
	events, err := collect(m, context.Background(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	_, calls, _ := split(events)
	if len(calls) != 2 || calls[0].Name != "weather" || calls[1].Name != "local_time" {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].ID == "" || calls[1].ID == "" || calls[0].ID == calls[1].ID {
		t.Fatalf("call ids %q and %q, want two distinct ids", calls[0].ID, calls[1].ID)
	}
	if string(calls[0].Arguments) != `{"city": "Oslo"}` {
		t.Errorf("arguments = %s", calls[0].Arguments)
	}
	// The history that answers them is a request the model accepts.
	req := simpleRequest()
	req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, ToolCalls: calls})
	for _, c := range calls {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, Content: "ok", ToolCallID: c.ID})
	}
	if _, err := collect(m, context.Background(), req); err != nil {
		t.Fatalf("the next request: %v", err)
	}
}
