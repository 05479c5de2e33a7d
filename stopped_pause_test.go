package spool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// A turn stopped while it runs a tool call, with another call of the same
// step waiting on an approval, ends cancelled (Session.Stop's contract):
// it does not pause on the approval, which a later Approve would use to
// run the tool and ask the model again, after the stop.
func TestStopWhileAnotherCallWaitsEndsCancelled(t *testing.T) {
	ctx := context.Background()
	running := make(chan struct{})
	slow := tool.New("slow", "Works until stopped.", func(ctx context.Context, _ struct{}) (string, error) {
		close(running)
		<-ctx.Done()
		return "", ctx.Err()
	})
	refund := tool.New("refund", "Refund.", func(context.Context, struct{}) (string, error) {
		return "refunded", nil
	}, tool.RequireApproval())
	m := scripted(
		[]model.Event{call("c1", "refund", "{}"), call("c2", "slow", "{}")},
		[]model.Event{text("done")},
	)
	a := newAgent(t, spool.Config{Model: m, Tools: []*tool.Tool{slow, refund}})
	sess := session(t, a, ctx, "s")
	type outcome struct {
		res *spool.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := sess.Send(ctx, "refund, then work")
		done <- outcome{res, err}
	}()
	<-running
	if _, err := sess.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	o := <-done
	var te *spool.TurnError
	if o.res == nil || o.res.Status != transcript.StatusCancelled || !errors.As(o.err, &te) {
		t.Fatalf("the stopped turn ended %+v, %v; want cancelled with a *TurnError", o.res, o.err)
	}
	entries, _ := sess.Transcript(ctx)
	checkWellFormed(t, entries)
	if last := entries[len(entries)-1]; last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("last entry %s %s; want the turn's end, cancelled", last.Type, last.Status)
	}
	if p, err := sess.PendingApprovals(ctx); err != nil || len(p) != 0 {
		t.Fatalf("pending approvals after the stop: %v, %v; want none", p, err)
	}
	if info, err := a.SessionInfo(ctx, sess.ID()); err != nil || info.PendingApprovals != 0 {
		t.Fatalf("the session's info after the stop: %+v, %v; want no pending approval", info, err)
	}
	if res, err := sess.Send(ctx, "next"); err != nil || res.Status != transcript.StatusOK {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
}
