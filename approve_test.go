package spool_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

type orderArgs struct {
	Order int `json:"order"`
}

// approvalTools returns delete_order (needs approval) and lookup_order
// (does not), counting calls of delete_order in calls when not nil.
func approvalTools(calls *atomic.Int32) []*tool.Tool {
	del := tool.New("delete_order", "Delete an order.", func(ctx context.Context, a orderArgs) (string, error) {
		if calls != nil {
			calls.Add(1)
		}
		return "deleted order " + itoa(a.Order), nil
	}, tool.RequireApproval())
	look := tool.New("lookup_order", "Find an order.", func(ctx context.Context, a orderArgs) (string, error) {
		return "order " + itoa(a.Order) + " ships Friday", nil
	})
	return []*tool.Tool{del, look}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestApprovalInTheSameProcess(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s, _ := a.Session(ctx, "s")
	res, err := s.Send(ctx, `/call delete_order {"order":1042}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != spool.StatusAwaitingApproval || len(res.Pending) != 1 || res.Pending[0].Tool != "delete_order" {
		t.Fatalf("result %+v", res)
	}
	if calls.Load() != 0 {
		t.Fatal("the tool ran before approval")
	}
	if _, err := s.Send(ctx, "anything"); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("Send while pending: %v", err)
	}
	pend, _ := s.PendingApprovals(ctx)
	if len(pend) != 1 || pend[0].ID != res.Pending[0].ID {
		t.Fatalf("pending %+v", pend)
	}
	info, _ := a.SessionInfo(ctx, "s")
	if info.PendingApprovals != 1 {
		t.Fatalf("info %+v", info)
	}
	if _, err := s.Approve(ctx, "apr_nope", transcript.ApprovalScopeOnce); !errors.Is(err, spool.ErrNoApproval) {
		t.Fatalf("unknown approval: %v", err)
	}
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != transcript.StatusOK || !strings.Contains(done.Text, "deleted order 1042") || done.TurnID != res.TurnID {
		t.Fatalf("resumed %+v", done)
	}
	if calls.Load() != 1 {
		t.Fatalf("tool ran %d times", calls.Load())
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	want := []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeApprovalRequest,
		transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeAssistantMessage, transcript.TypeTurnEnd}
	if got := types(entries); !equalTypes(got, want) {
		t.Fatalf("transcript %v\nwant %v", got, want)
	}
	// Once only: the next call asks again.
	res, _ = s.Send(ctx, `/call delete_order {"order":7}`)
	if res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("scope once approved the next call too: %+v", res)
	}
}

func equalTypes(a, b []transcript.Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestApprovalAfterRestart(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	var calls atomic.Int32
	first := newAgent(t, spool.Config{Store: st, Tools: approvalTools(&calls)})
	s, _ := first.Session(ctx, "restart")
	res, err := s.Send(ctx, `/call delete_order {"order":5}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	// The process ends; a new one starts with a new agent on the same store.
	second := newAgent(t, spool.Config{Store: st, Tools: approvalTools(&calls)})
	o, err := second.OpenSession(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	pend, err := o.PendingApprovals(ctx)
	if err != nil || len(pend) != 1 || pend[0].Tool != "delete_order" || string(pend[0].Arguments) != `{"order":5}` {
		t.Fatalf("pending after restart: %+v %v", pend, err)
	}
	done, err := o.Approve(ctx, pend[0].ID, transcript.ApprovalScopeSession)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != transcript.StatusOK || !strings.Contains(done.Text, "deleted order 5") {
		t.Fatalf("%+v", done)
	}
	// Session scope: the tool now runs without asking, also after another
	// restart.
	third := newAgent(t, spool.Config{Store: st, Tools: approvalTools(&calls)})
	o3, err := third.OpenSession(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	res, err = o3.Send(ctx, `/call delete_order {"order":6}`)
	if err != nil || res.Status != transcript.StatusOK || !strings.Contains(res.Text, "deleted order 6") {
		t.Fatalf("session-approved tool asked again: %+v %v", res, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("calls %d", calls.Load())
	}
	entries, _ := o3.Transcript(ctx)
	checkWellFormed(t, entries)
}

func TestDenial(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s, _ := a.Session(ctx, "d")
	res, _ := s.Send(ctx, `/call delete_order {"order":1}`)
	done, err := s.Deny(ctx, res.Pending[0].ID, "not today")
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Fatal("a denied tool ran")
	}
	if !strings.Contains(done.Text, "denied") || !strings.Contains(done.Text, "not today") {
		t.Fatalf("the model was not told of the denial: %q", done.Text)
	}
	entries, _ := s.Transcript(ctx)
	var r transcript.ToolResult
	for _, e := range entries {
		if e.Type == transcript.TypeToolResult {
			_ = e.DecodeData(&r)
		}
	}
	if !r.IsError || !strings.Contains(r.Result, "not today") {
		t.Fatalf("denial result %+v", r)
	}
}

func TestParallelCallsMixApprovalAndNot(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s, _ := a.Session(ctx, "p")
	res, err := s.Send(ctx, "/call lookup_order {\"order\":1}\n/call delete_order {\"order\":2}\n/call delete_order {\"order\":3}")
	if err != nil || len(res.Pending) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	// Approving one for the session settles its twin.
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeSession)
	if err != nil || done.Status != transcript.StatusOK {
		t.Fatalf("%+v %v", done, err)
	}
	for _, want := range []string{"order 1 ships Friday", "deleted order 2", "deleted order 3"} {
		if !strings.Contains(done.Text, want) {
			t.Fatalf("answer %q lacks %q", done.Text, want)
		}
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	info, _ := a.SessionInfo(ctx, "p")
	if info.PendingApprovals != 0 {
		t.Fatalf("pending %d", info.PendingApprovals)
	}
}

func TestToolModes(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls), ToolMode: transcript.ToolModeAuto})
	s, _ := a.Session(ctx, "m")
	res, err := s.Send(ctx, `/call delete_order {"order":9}`)
	if err != nil || res.Status != transcript.StatusOK || calls.Load() != 1 {
		t.Fatalf("auto mode: %+v %v calls=%d", res, err, calls.Load())
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeOff); err != nil {
		t.Fatal(err)
	}
	res, _ = s.Send(ctx, `/call delete_order {"order":10}`)
	if calls.Load() != 1 || res.Status != transcript.StatusOK {
		t.Fatalf("off mode ran the tool: %+v", res)
	}
	if err := s.SetToolMode(ctx, "sometimes"); err == nil {
		t.Fatal("bad mode accepted")
	}
}

func TestToolTimeoutIsAnErrorResultNotRetried(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int32
	slow := tool.New("slow", "Takes long.", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(20*time.Millisecond))
	a := newAgent(t, spool.Config{Tools: []*tool.Tool{slow}})
	s, _ := a.Session(ctx, "t")
	res, err := s.Send(ctx, "/call slow {}")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("%+v %v", res, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("timed-out tool ran %d times", runs.Load())
	}
	if !strings.Contains(res.Text, "timed out") {
		t.Fatalf("the model was not told of the timeout: %q", res.Text)
	}
}

func TestBadToolArgumentsAreAnErrorResult(t *testing.T) {
	ctx := context.Background()
	a := newAgent(t, spool.Config{Tools: approvalTools(nil), ToolMode: transcript.ToolModeAuto})
	s, _ := a.Session(ctx, "b")
	res, err := s.Send(ctx, `/call lookup_order {"order":"not a number"}`)
	if err != nil || !strings.Contains(res.Text, "invalid arguments") {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = s.Send(ctx, `/call no_such_tool {}`)
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("%+v %v", res, err)
	}
	_ = store.ErrNotFound
}
