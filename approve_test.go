package spool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "s")
	res, err := s.Send(ctx, `/call delete_order {"order":1042}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != spool.StatusAwaitingApproval || len(res.Pending) != 1 || res.Pending[0].Tool != "delete_order" {
		t.Fatalf("Send = %+v, want it awaiting the approval of one delete_order call", res)
	}
	if calls.Load() != 0 {
		t.Fatal("the tool ran before approval")
	}
	if _, err := s.Send(ctx, "anything"); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("Send while an approval is pending = %v, want ErrApprovalPending", err)
	}
	pend, _ := s.PendingApprovals(ctx)
	if len(pend) != 1 || pend[0].ID != res.Pending[0].ID {
		t.Fatalf("PendingApprovals = %+v, want the one approval Send returned", pend)
	}
	info, err := a.SessionInfo(ctx, "s")
	if err != nil || info.PendingApprovals != 1 {
		t.Fatalf("SessionInfo = %+v, %v; want 1 pending approval", info, err)
	}
	if _, err := s.Approve(ctx, "apr_nope", transcript.ApprovalScopeOnce); !errors.Is(err, spool.ErrNoApproval) {
		t.Fatalf("Approve of an unknown approval = %v, want ErrNoApproval", err)
	}
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != transcript.StatusOK || !strings.Contains(done.Text, "deleted order 1042") || done.TurnID != res.TurnID {
		t.Fatalf("Approve = %+v, want the same turn ended ok with the tool's result", done)
	}
	if calls.Load() != 1 {
		t.Fatalf("the tool ran %d times, want once", calls.Load())
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	want := []transcript.Type{transcript.TypeUserMessage, transcript.TypeAssistantMessage, transcript.TypeApprovalRequest,
		transcript.TypeApprovalDecision, transcript.TypeToolResult, transcript.TypeAssistantMessage, transcript.TypeTurnEnd}
	if got := types(entries); !equalTypes(got, want) {
		t.Fatalf("transcript %v\nwant %v", got, want)
	}
	// Once only: the next call asks again.
	res, err = s.Send(ctx, `/call delete_order {"order":7}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("the next call = %+v, %v; want it awaiting approval again (scope once)", res, err)
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
	ctx := t.Context()
	st := memstore.New()
	var calls atomic.Int32
	first := newAgent(t, spool.Config{Store: st, Tools: approvalTools(&calls)})
	s := session(t, first, ctx, "restart")
	res, err := s.Send(ctx, `/call delete_order {"order":5}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("Send = %+v, %v; want it awaiting approval", res, err)
	}
	// The process ends; a new one starts with a new agent on the same store.
	second := newAgent(t, spool.Config{Store: st, Tools: approvalTools(&calls)})
	o, err := second.OpenSession(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	pend, err := o.PendingApprovals(ctx)
	if err != nil || len(pend) != 1 || pend[0].Tool != "delete_order" || string(pend[0].Arguments) != `{"order":5}` {
		t.Fatalf("PendingApprovals after a restart = %+v, %v; want the delete_order call with its arguments", pend, err)
	}
	done, err := o.Approve(ctx, pend[0].ID, transcript.ApprovalScopeSession)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != transcript.StatusOK || !strings.Contains(done.Text, "deleted order 5") {
		t.Fatalf("Approve after a restart = %+v, want ok with the tool's result", done)
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
		t.Fatalf("Send of a tool approved for the session = %+v, %v; want it run without asking", res, err)
	}
	if calls.Load() != 2 {
		t.Fatalf("the tool ran %d times, want 2", calls.Load())
	}
	entries, _ := o3.Transcript(ctx)
	checkWellFormed(t, entries)
}

func TestDenial(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "d")
	res, err := s.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("Send = %+v, %v; want one pending approval", res, err)
	}
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
		t.Fatalf("the denied call's result = %+v, want an error naming the reason", r)
	}
}

func TestParallelCallsMixApprovalAndNot(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "p")
	res, err := s.Send(ctx, "/call lookup_order {\"order\":1}\n/call delete_order {\"order\":2}\n/call delete_order {\"order\":3}")
	if err != nil || len(res.Pending) != 2 {
		t.Fatalf("Send = %+v, %v; want the two delete_order calls pending", res, err)
	}
	// Approving one for the session settles its twin.
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeSession)
	if err != nil || done.Status != transcript.StatusOK {
		t.Fatalf("Approve for the session = %+v, %v; want the turn ended ok", done, err)
	}
	for _, want := range []string{"order 1 ships Friday", "deleted order 2", "deleted order 3"} {
		if !strings.Contains(done.Text, want) {
			t.Fatalf("answer %q lacks %q", done.Text, want)
		}
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	info, err := a.SessionInfo(ctx, "p")
	if err != nil || info.PendingApprovals != 0 {
		t.Fatalf("SessionInfo = %+v, %v; want no pending approvals", info, err)
	}
}

func TestToolModes(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls), ToolMode: transcript.ToolModeAuto})
	s := session(t, a, ctx, "m")
	res, err := s.Send(ctx, `/call delete_order {"order":9}`)
	if err != nil || res.Status != transcript.StatusOK || calls.Load() != 1 {
		t.Fatalf("tool mode auto: Send = %+v, %v, %d calls; want ok and the tool run once without asking", res, err, calls.Load())
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeOff); err != nil {
		t.Fatal(err)
	}
	res, err = s.Send(ctx, `/call delete_order {"order":10}`)
	if err != nil || calls.Load() != 1 || res.Status != transcript.StatusOK {
		t.Fatalf("tool mode off: Send = %+v, %v, %d calls; want ok and the tool not run", res, err, calls.Load())
	}
	if err := s.SetToolMode(ctx, "sometimes"); err == nil {
		t.Fatal("SetToolMode(\"sometimes\") succeeded, want an error naming the modes")
	}
}

func TestToolTimeoutIsAnErrorResultNotRetried(t *testing.T) {
	ctx := t.Context()
	var runs atomic.Int32
	slow := tool.New("slow", "Takes long.", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithTimeout(20*time.Millisecond))
	a := newAgent(t, spool.Config{Tools: []*tool.Tool{slow}})
	s := session(t, a, ctx, "t")
	res, err := s.Send(ctx, "/call slow {}")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send = %+v, %v; want ok, the timeout a result for the model", res, err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the timed-out tool ran %d times, want once (no retry)", runs.Load())
	}
	if !strings.Contains(res.Text, "timed out") {
		t.Fatalf("the model was not told of the timeout: %q", res.Text)
	}
}

func TestBadToolArgumentsAreAnErrorResult(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Tools: approvalTools(nil), ToolMode: transcript.ToolModeAuto})
	s := session(t, a, ctx, "b")
	res, err := s.Send(ctx, `/call lookup_order {"order":"not a number"}`)
	if err != nil || !strings.Contains(res.Text, "invalid arguments") {
		t.Fatalf("Send with bad arguments = %+v, %v; want ok, with the model told of invalid arguments", res, err)
	}
	res, err = s.Send(ctx, `/call no_such_tool {}`)
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send of a call to no tool = %+v, %v; want the turn ended ok", res, err)
	}
}

// gatedStore is a store without a lock whose first approval.decision
// append waits for gate (held is closed when it does).
type gatedStore struct {
	plainStore
	once sync.Once
	gate chan struct{}
	held chan struct{}
}

func (g *gatedStore) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	if e.Type == transcript.TypeApprovalDecision {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.held)
			<-g.gate
		}
	}
	return g.plainStore.Append(ctx, k, e)
}

// Two processes on a store without a lock approve the same call at once.
// The one whose decision loses the race reports it and writes nothing: the
// turn the winner runs goes on, and its tool's result is recorded.
func TestApproveRaceOnStoreWithoutLock(t *testing.T) {
	ctx := t.Context()
	st := &gatedStore{plainStore: plainStore{memstore.New()}, gate: make(chan struct{}), held: make(chan struct{})}
	a1 := newAgent(t, spool.Config{Store: st, Tools: approvalTools(nil)})
	toolIn, toolOut := make(chan struct{}), make(chan struct{})
	slow := tool.New("delete_order", "Delete an order.", func(ctx context.Context, a orderArgs) (string, error) {
		close(toolIn)
		<-toolOut
		return "deleted", nil
	}, tool.RequireApproval())
	a2 := newAgent(t, spool.Config{Store: st, Tools: []*tool.Tool{slow}})
	s1, s2 := session(t, a1, ctx, "s"), session(t, a2, ctx, "s")
	res, err := s1.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatal(res, err)
	}
	id := res.Pending[0].ID
	err1 := make(chan error, 1)
	go func() { _, err := s1.Approve(ctx, id, transcript.ApprovalScopeOnce); err1 <- err }()
	<-st.held // a1 read the state and is appending its decision
	err2 := make(chan error, 1)
	go func() { _, err := s2.Approve(ctx, id, transcript.ApprovalScopeOnce); err2 <- err }()
	<-toolIn // a2 decided and runs the call
	close(st.gate)
	e1 := <-err1
	close(toolOut)
	if e2 := <-err2; e2 != nil {
		t.Fatalf("the approval that won the race failed: %v (the other: %v)", e2, e1)
	}
	if e1 == nil {
		t.Fatal("the approval that lost the race succeeded")
	}
	entries, err := s1.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	end := entries[len(entries)-1]
	if end.Type != transcript.TypeTurnEnd || end.Status != transcript.StatusOK {
		t.Fatalf("the turn ended %s %s, want ok", end.Type, end.Status)
	}
}
