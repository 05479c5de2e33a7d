package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/history"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/server"
)

// TestCompactRoute: POST /v1/sessions/{id}/compact with keepTurns, with
// no body, and its errors; the history route then shows the summary and
// where it is, the messages route every message still. Every response is
// checked against the OpenAPI document.
func TestCompactRoute(t *testing.T) {
	e := newEnv(t, spool.Config{Instructions: "Be brief."}, server.Options{})
	for _, p := range []string{"one", "two", "three", "four"} {
		e.post("/invoke", map[string]any{"prompt": p, "sessionId": "s"})
	}
	r := e.post("/v1/sessions/s/compact", map[string]any{"keepTurns": 2})
	if r.status != 200 {
		t.Fatalf("compact: %d %s", r.status, r.body)
	}
	var res spool.CompactResult
	r.json(t, &res)
	if res.Turns != 2 || res.Summary != "- one\n- two" || res.Before.Messages != 9 || res.After.Messages != 7 || res.EntryID == "" {
		t.Fatalf("result %+v", res)
	}
	r = e.get("/v1/sessions/s/history")
	var h struct {
		Messages []model.Message
		Summary  *struct {
			EntryID, FirstTurn, LastTurn, Text string
			Index                              int
		}
	}
	r.json(t, &h)
	if h.Summary == nil || h.Summary.EntryID != res.EntryID || h.Summary.Index != 1 || h.Summary.Text != "- one\n- two" ||
		h.Summary.FirstTurn != res.FirstTurn || h.Summary.LastTurn != res.LastTurn ||
		h.Messages[2].Content != history.SummaryPrefix+"- one\n- two" || len(h.Messages) != 7 {
		t.Fatalf("history %s", r.body)
	}
	lines, msgs := messagesOf(t, e, "s", "")
	if len(lines) != 8 || msgs[3].TurnID != res.LastTurn {
		t.Fatalf("messages after compaction: %v", lines)
	}
	// No body: the agent's KeepTurns (4): nothing to compact.
	r = e.do(req{method: "POST", path: "/v1/sessions/s/compact"})
	if r.status != 409 || r.errCode(t) != "nothing_to_compact" {
		t.Fatalf("compact with nothing to do: %d %s", r.status, r.body)
	}
	for _, bad := range []struct {
		path string
		body any
		code string
	}{
		{"/v1/sessions/s/compact", map[string]any{"keepTurns": -1}, "invalid_request"},
		{"/v1/sessions/s/compact", map[string]any{"keep": 1}, "invalid_request"},
		{"/v1/sessions/s/compact", "{", "bad_request"},
		{"/v1/sessions/nope/compact", map[string]any{}, "session_not_found"},
	} {
		if r := e.post(bad.path, bad.body); r.errCode(t) != bad.code || !strings.Contains(string(r.body), bad.code) {
			t.Errorf("POST %s %v: %d %s, want %s", bad.path, bad.body, r.status, r.body, bad.code)
		}
	}
	// A session without compaction has no summary field.
	e.post("/invoke", map[string]any{"prompt": "hi", "sessionId": "plain"})
	if r := e.get("/v1/sessions/plain/history"); strings.Contains(string(r.body), `"summary"`) {
		t.Errorf("history of an uncompacted session: %s", r.body)
	}
}

// TestCompactRouteSummarizerFails: a failing summarizer is 502
// summarizer_failed, and nothing changes.
func TestCompactRouteSummarizerFails(t *testing.T) {
	fail := func(context.Context, spool.SummaryInput) (spool.Summary, error) {
		return spool.Summary{}, errors.New("the cheap model is down")
	}
	e := newEnv(t, spool.Config{Compaction: spool.Compaction{Summarizer: fail}}, server.Options{})
	for _, p := range []string{"one", "two"} {
		e.post("/invoke", map[string]any{"prompt": p, "sessionId": "s"})
	}
	before := len(e.transcriptOf("", "s"))
	r := e.post("/v1/sessions/s/compact", map[string]any{"keepTurns": 1})
	if r.status != 502 || r.errCode(t) != "summarizer_failed" || !strings.Contains(string(r.body), "the cheap model is down") {
		t.Fatalf("compact with a failing summarizer: %d %s", r.status, r.body)
	}
	if after := len(e.transcriptOf("", "s")); after != before {
		t.Errorf("%d entries appended by a failed compaction", after-before)
	}
}

// TestCompactRouteApprovalPending: compact while a turn waits on an
// approval is 409 approval_pending naming the approval, and writes
// nothing; once the approval is decided it compacts.
func TestCompactRouteApprovalPending(t *testing.T) {
	e := newEnv(t, spool.Config{}, server.Options{})
	for _, p := range []string{"one", "two"} {
		e.post("/invoke", map[string]any{"prompt": p, "sessionId": "s"})
	}
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "s"}).json(t, &res)
	if len(res.Pending) != 1 {
		t.Fatalf("invoke: %+v, want an approval pending", res)
	}
	before := len(e.transcriptOf("", "s"))
	r := e.post("/v1/sessions/s/compact", map[string]any{"keepTurns": 1})
	if r.status != 409 || r.errCode(t) != server.CodeApprovalPending || !strings.Contains(string(r.body), res.Pending[0].ID) {
		t.Fatalf("compact with an approval pending: %d %s, want 409 approval_pending naming %s", r.status, r.body, res.Pending[0].ID)
	}
	if after := len(e.transcriptOf("", "s")); after != before {
		t.Fatalf("the refusal wrote %d entries", after-before)
	}
	if r := e.post("/v1/sessions/s/approvals/"+res.Pending[0].ID, map[string]any{"decision": "allow"}); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/sessions/s/compact", map[string]any{"keepTurns": 1}); r.status != 200 {
		t.Fatalf("compact after the decision: %d %s", r.status, r.body)
	}
}
