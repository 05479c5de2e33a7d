package spool_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// armedStore fails every append once armed.
type armedStore struct {
	store.Store
	fail atomic.Bool
}

func (a *armedStore) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	if a.fail.Load() {
		return errDisk
	}
	return a.Store.Append(ctx, k, e)
}

// A consumer that stops while the store fails must not be resumed with
// the error: a range loop cannot continue after its body returned false.
func TestNoYieldAfterTheConsumerStopped(t *testing.T) {
	ctx := t.Context()
	st := &armedStore{Store: memstore.New()}
	a := newAgent(t, spool.Config{Store: st, Model: &countingModel{n: 100}})
	s := session(t, a, ctx, "stop")
	for ev, err := range s.Stream(ctx, "go") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventText {
			st.fail.Store(true) // recording the cancelled turn will fail
			break
		}
	}
	st.fail.Store(false)
	// The abandoned turn is closed at once by the next call.
	res, err := s.Send(ctx, "again")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send after the stopped turn = %+v, %v; want ok", res, err)
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
}

// A turn stopped during its tool calls does not start the calls after.
func TestStoppedTurnRunsNoMoreTools(t *testing.T) {
	ctx := t.Context()
	var runs atomic.Int32
	charge := tool.New("charge", "Charge.", func(ctx context.Context, _ struct{}) (string, error) {
		runs.Add(1)
		return "charged", nil
	})
	m := scripted([]model.Event{call("c1", "charge", "{}"), call("c2", "charge", "{}"), call("c3", "charge", "{}")})
	a := newAgent(t, spool.Config{Model: m, Tools: []*tool.Tool{charge}, ToolMode: transcript.ToolModeAuto})
	s := session(t, a, ctx, "charges")
	for ev, err := range s.Stream(ctx, "charge three times") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == spool.EventToolResult {
			break
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d calls ran after the consumer stopped at the first result, want 1", n)
	}
	entries, _ := s.Transcript(ctx)
	notRun := 0
	for _, e := range entries {
		var r transcript.ToolResult
		if e.Type == transcript.TypeToolResult && e.DecodeData(&r) == nil && strings.Contains(r.Result, "not run") {
			notRun++
		}
	}
	if notRun != 2 || entries[len(entries)-1].Status != transcript.StatusCancelled {
		t.Fatalf("%d calls recorded as not run and the last entry is %s %s; want 2 and a cancelled turn end", notRun, entries[len(entries)-1].Type, entries[len(entries)-1].Status)
	}
	checkWellFormed(t, entries)
}

// What a turn used before it paused for an approval counts: in its end,
// and against the budgets.
func TestUsageBeforeAPauseCounts(t *testing.T) {
	ctx := t.Context()
	m := scripted(
		[]model.Event{call("c1", "delete_order", `{"order":1}`), {Kind: model.EventUsage, Usage: transcript.Usage{InputTokens: 1500, OutputTokens: 500}}},
		[]model.Event{text("done"), {Kind: model.EventUsage, Usage: transcript.Usage{InputTokens: 1, OutputTokens: 1}}},
	)
	// 2,001: enough for the turn to finish after its pause (2,000 used),
	// not for another turn once its 2,002 count.
	a := newAgent(t, spool.Config{Model: m, Tools: approvalTools(nil), SessionTokenBudget: 2001})
	s := session(t, a, ctx, "budget")
	res, err := s.Send(ctx, "delete it")
	if err != nil || res.Status != spool.StatusAwaitingApproval || res.Usage.InputTokens != 1500 {
		t.Fatalf("Send = %+v, %v; want it awaiting approval with 1500 input tokens used", res, err)
	}
	res, err = s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil || res.Usage != (transcript.Usage{InputTokens: 1501, OutputTokens: 501}) {
		t.Fatalf("the resumed turn's usage = %+v, %v; want the usage before the pause and after it summed", res.Usage, err)
	}
	entries, _ := s.Transcript(ctx)
	var end transcript.TurnEnd
	_ = entries[len(entries)-1].DecodeData(&end)
	if end.Usage.InputTokens != 1501 {
		t.Fatalf("the turn end records usage %+v, want 1501 input tokens", end.Usage)
	}
	res, err = s.Send(ctx, "more")
	if res == nil || res.Status != transcript.StatusError || res.Error.Code != transcript.CodeOverBudget {
		t.Fatalf("Send over the budget after a pause = %+v, %v; want status error, code over_budget", res, err)
	}
}

// A store that fails in the middle of a turn: the call fails, and once the
// store is back the next call closes the broken turn at once instead of
// waiting for it as if another process ran it.
func TestStoreFailureMidTurnDoesNotWedgeTheSession(t *testing.T) {
	st := &armedStore{Store: plainStore{memstore.New()}} // no lock: the waiting path
	var once atomic.Bool
	m := echoScript(func(*model.Request) []model.Event {
		if !once.Swap(true) {
			st.fail.Store(true) // the store fails under the first turn
		}
		return []model.Event{text("answer")}
	})
	var ends atomic.Int32
	obs := spool.ObserverFunc(func(ctx context.Context, o spool.Observation) {
		if o.Kind == spool.ObserveTurnEnd {
			ends.Add(1)
		}
	})
	a := newAgent(t, spool.Config{Store: st, Model: m, BusyTimeout: time.Hour, StaleTurn: time.Hour, Observers: []spool.Observer{obs}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s := session(t, a, ctx, "flaky")
	if _, err := s.Send(ctx, "first"); !errors.Is(err, errDisk) {
		t.Fatalf("%v, want the store's error", err)
	}
	if ends.Load() != 1 {
		t.Fatalf("%d turn ends observed for the failed turn, want 1", ends.Load())
	}
	st.fail.Store(false)
	res, err := s.Send(ctx, "second")
	if err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("Send after the store recovered = %+v, %v; want ok", res, err)
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
}

func TestNoModeChangeInsideAPausedTurn(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Tools: approvalTools(nil)})
	s := session(t, a, ctx, "mode")
	res, err := s.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("Send = %+v, %v; want one pending approval", res, err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeOff); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("%v, want ErrApprovalPending", err)
	}
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce); err != nil {
		t.Fatal(err)
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
}
