package spool_test

import (
	"context"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/transcript"
)

// idlessModel answers the first request with two calls of delete_order
// that have no id (a model of the caller's, or a server that streams
// none), and every later one with text, keeping the tool messages it was
// sent.
type idlessModel struct {
	mu    sync.Mutex
	n     int
	calls []transcript.ToolCall // the calls of the last request's assistant message
	tools map[string]string     // the last request's tool messages by call id
}

func (m *idlessModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		m.mu.Lock()
		m.n++
		first := m.n == 1
		m.calls, m.tools = nil, map[string]string{}
		for _, msg := range req.Messages {
			if msg.Role == model.RoleAssistant && len(msg.ToolCalls) > 0 {
				m.calls = append([]transcript.ToolCall(nil), msg.ToolCalls...)
			}
			if msg.Role == model.RoleTool {
				m.tools[msg.ToolCallID] = msg.Content
			}
		}
		m.mu.Unlock()
		if first {
			for _, args := range []string{`{"order":1}`, `{"order":2}`} {
				if !yield(model.Event{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{Name: "delete_order", Arguments: []byte(args)}}, nil) {
					return
				}
			}
			return
		}
		yield(model.Event{Kind: model.EventText, Text: "done"}, nil)
	}
}

// TestIDlessCallsDecidedOutOfOrder: a model streams two calls of one tool
// without an id, which wait on approvals; the second is denied first,
// then the first allowed. The runtime gives each call an id of its own,
// which its approval names; it runs the call allowed (order 1) and not
// the one denied, and the next request sends each result with the call it
// was for. (Recorded without ids, the history paired the results in their
// order, so the run's went to the denied call and the denial to the call
// that ran; history.TestCallsWithoutIDsDecidedOutOfOrder keeps such
// transcripts right.)
func TestIDlessCallsDecidedOutOfOrder(t *testing.T) {
	ctx := t.Context()
	var ran atomic.Int32
	m := &idlessModel{}
	a := newAgent(t, spool.Config{Model: m, Tools: approvalTools(&ran)})
	s := session(t, a, ctx, "idless")
	res, err := s.Send(ctx, "delete orders 1 and 2")
	if err != nil || len(res.Pending) != 2 {
		t.Fatalf("Send = %+v, %v; want two pending approvals", res, err)
	}
	if p := res.Pending; !strings.HasPrefix(p[0].CallID, "call_") || !strings.HasPrefix(p[1].CallID, "call_") || p[0].CallID == p[1].CallID ||
		!strings.Contains(string(p[0].Arguments), "1") || !strings.Contains(string(p[1].Arguments), "2") {
		t.Fatalf("pending = %+v, want order 1's then order 2's, each with a call id of its own", res.Pending)
	}
	if _, err := s.Deny(ctx, res.Pending[1].ID, "keep 2"); err != nil {
		t.Fatal(err)
	}
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil || done.Status != transcript.StatusOK {
		t.Fatalf("Approve = %+v, %v; want the turn ended ok", done, err)
	}
	if ran.Load() != 1 {
		t.Fatalf("delete_order ran %d times, want once", ran.Load())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.calls) != 2 {
		t.Fatalf("the last request's calls = %+v, want two", m.calls)
	}
	want := map[string]string{"1": "deleted order 1", "2": "error: the user denied this call: keep 2"}
	for i, c := range m.calls {
		if c.ID != res.Pending[i].CallID {
			t.Errorf("call %d is sent with id %q, its approval named %q", i, c.ID, res.Pending[i].CallID)
		}
		order := strings.Trim(strings.TrimPrefix(string(c.Arguments), `{"order":`), "}")
		if got := m.tools[c.ID]; c.ID == "" || got != want[order] {
			t.Errorf("call %s (order %s) was sent %q, want %q", c.ID, order, got, want[order])
		}
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
}
