package spool_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// restartable is an agent on a file store in dir, made again on restart.
type restartable struct {
	t   *testing.T
	dir string
	cfg spool.Config
	a   *spool.Agent
}

func (r *restartable) restart() *spool.Session {
	r.t.Helper()
	if r.a != nil {
		r.a.Close()
	}
	st, err := filestore.New(r.t.Context(), r.dir, filestore.WithRetention(store.Retention{}))
	if err != nil {
		r.t.Fatal(err)
	}
	cfg := r.cfg
	cfg.Store = st
	r.a = newAgent(r.t, cfg)
	r.t.Cleanup(func() { r.a.Close() })
	return session(r.t, r.a, r.t.Context(), "s")
}

func histText(t *testing.T, s *spool.Session) string {
	t.Helper()
	msgs, err := s.History(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b []string
	for _, m := range msgs {
		if m.Role == model.RoleSystem {
			continue
		}
		b = append(b, string(m.Role)+":"+m.Content)
	}
	return strings.Join(b, " | ")
}

func turnIDs(t *testing.T, s *spool.Session) []string {
	t.Helper()
	entries, err := s.Transcript(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Type == transcript.TypeUserMessage {
			out = append(out, e.TurnID)
		}
	}
	return out
}

// TestAttackEditAfterCompactionAcrossRestarts: on the file store, with a
// new Agent between every step, a compaction, an edit of a turn it covers
// (the summary stops applying), a second compaction of the new branch, a
// switch back (the newest compaction that applies wins) and a regenerate
// each give the history the rules say, the same after a restart.
func TestAttackEditAfterCompactionAcrossRestarts(t *testing.T) {
	ctx := t.Context()
	r := &restartable{t: t, dir: t.TempDir()}
	s := r.restart()
	for _, q := range []string{"q1", "q2", "q3", "q4"} {
		if _, err := s.Send(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(text string) spool.Summarizer {
		return func(context.Context, spool.SummaryInput) (spool.Summary, error) {
			return spool.Summary{Text: text}, nil
		}
	}
	s = r.restart()
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: sum("S123")}); err != nil {
		t.Fatal(err)
	}
	h := histText(t, s)
	t.Log(h)
	if !strings.Contains(h, "S123") || strings.Contains(h, "q2") {
		t.Fatalf("after compaction: %s", h)
	}
	ids := turnIDs(t, s)
	s = r.restart()
	res, err := s.Edit(ctx, ids[1], "q2b")
	if err != nil {
		t.Fatal(err)
	}
	h = histText(t, s)
	t.Log(h)
	if want := "user:q1 | assistant:echo: q1 | user:q2b | assistant:echo: q2b"; h != want {
		t.Fatalf("after edit: %s\nwant %s", h, want)
	}
	s = r.restart()
	if got := histText(t, s); got != h {
		t.Fatalf("after restart %s, want %s", got, h)
	}
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1, Summarizer: sum("S1")}); err != nil {
		t.Fatal(err)
	}
	h = histText(t, s)
	t.Log(h)
	if !strings.Contains(h, "S1") || strings.Contains(h, "q1") || !strings.Contains(h, "q2b") {
		t.Fatalf("after 2nd compaction: %s", h)
	}
	s = r.restart()
	if err := s.SwitchBranch(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	h = histText(t, s)
	t.Log(h)
	if strings.Contains(h, "q2b") || !strings.Contains(h, "q4") {
		t.Fatalf("after switch: %s", h)
	}
	s = r.restart()
	if got := histText(t, s); got != h {
		t.Fatalf("after restart %s, want %s", got, h)
	}
	if err := s.SwitchBranch(ctx, res.TurnID); err != nil {
		t.Fatal(err)
	}
	h2 := histText(t, s)
	t.Log(h2)
	if _, err := s.Regenerate(ctx); err != nil {
		t.Fatal(err)
	}
	h3 := histText(t, s)
	t.Log(h3)
	s = r.restart()
	if got := histText(t, s); got != h3 {
		t.Fatalf("after restart %s, want %s", got, h3)
	}
}

// TestAttackRegenerateFailedTurns: a turn that ended in error is
// regenerated like any other, and its partial answer is never sent.
func TestAttackRegenerateFailedTurns(t *testing.T) {
	ctx := t.Context()
	m := &failFirst{}
	a := newAgent(t, spool.Config{Model: m})
	s := session(t, a, ctx, "x")
	res, err := s.Send(ctx, "hello")
	t.Logf("first: %+v %v", res, err)
	res, err = s.Regenerate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("regen: %+v", res)
	if res.Status != transcript.StatusOK {
		t.Fatalf("status %s", res.Status)
	}
	if h := histText(t, s); h != "user:hello | assistant:ok hello" {
		t.Fatalf("history %s", h)
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
}

// TestAttackRegenerateAwaitingApproval: regenerate, edit, switch and
// compact are refused while a turn waits on an approval; a denied turn's
// regeneration asks again, the superseded approval cannot be decided, and
// the new one survives a restart.
func TestAttackRegenerateAwaitingApproval(t *testing.T) {
	ctx := t.Context()
	tl := tool.New("danger", "d", func(ctx context.Context, in struct{}) (string, error) { return "done", nil }, tool.RequireApproval())
	a := newAgent(t, spool.Config{Tools: []*tool.Tool{tl}})
	s := session(t, a, ctx, "x")
	if _, err := s.Send(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(ctx, "/call danger {}")
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	ids := turnIDs(t, s)
	if _, err := s.Regenerate(ctx); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("regenerate: %v", err)
	}
	if _, err := s.Edit(ctx, ids[0], "q1b"); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("edit: %v", err)
	}
	if err := s.SwitchBranch(ctx, ids[0]); err != nil {
		t.Logf("switch: %v", err)
	}
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("compact: %v", err)
	}
	// deny, then regenerate the denied turn
	if _, err := s.Deny(ctx, res.Pending[0].ID, "no"); err != nil {
		t.Fatal(err)
	}
	res2, err := s.Regenerate(ctx)
	if err != nil || res2.Status != spool.StatusAwaitingApproval {
		t.Fatalf("%+v %v", res2, err)
	}
	// the old approval must not be decidable
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce); err == nil {
		t.Fatalf("approving the superseded approval worked")
	}
	p, _ := s.PendingApprovals(ctx)
	if len(p) != 1 || p[0].ID != res2.Pending[0].ID {
		t.Fatalf("pending %+v", p)
	}
	// Edit q1 while the regenerated turn waits: refused
	if _, err := s.Edit(ctx, ids[0], "q1b"); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("edit: %v", err)
	}
	r2 := session(t, newAgent(t, spool.Config{Store: a.Store(), Tools: []*tool.Tool{tl}}), ctx, "x")
	p, _ = r2.PendingApprovals(ctx)
	if len(p) != 1 || p[0].ID != res2.Pending[0].ID {
		t.Fatalf("after restart pending %+v", p)
	}
	res3, err := r2.Approve(ctx, p[0].ID, transcript.ApprovalScopeOnce)
	if err != nil || res3.Status != transcript.StatusOK {
		t.Fatalf("%+v %v", res3, err)
	}
	t.Log(histText(t, r2))
	entries, _ := r2.Transcript(ctx)
	checkWellFormed(t, entries)
}

type failFirst struct{ calls int }

func (f *failFirst) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	f.calls++
	n := f.calls
	return func(yield func(model.Event, error) bool) {
		if n == 1 {
			if !yield(text("part"), nil) {
				return
			}
			yield(model.Event{}, errors.New("boom"))
			return
		}
		last := req.Messages[len(req.Messages)-1]
		yield(text("ok "+last.Content), nil)
	}
}
