package spool_test

import (
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/transcript"
)

// TestPageTurns: a page describes the turns of its messages: how each
// ended, its model, usage and duration, and how its approvals were
// answered; a turn split between pages is described on both, its end on
// the newer page.
func TestPageTurns(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "p")
	first, err := s.Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(ctx, `/call delete_order {"order":9}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("Send = %+v, %v; want a pending approval", res, err)
	}
	if _, err := s.Deny(ctx, res.Pending[0].ID, "not today"); err != nil {
		t.Fatal(err)
	}
	for _, order := range []spool.Order{spool.OrderDesc, spool.OrderAsc} {
		page, err := s.Page(ctx, spool.PageOptions{Order: order})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Turns) != 2 {
			t.Fatalf("%s: turns %+v, want 2", order, page.Turns)
		}
		byID := map[string]spool.TurnInfo{}
		for _, ti := range page.Turns {
			byID[ti.TurnID] = ti
		}
		hello := byID[first.TurnID]
		if hello.Status != transcript.StatusOK || hello.Model == "" || hello.Usage == nil || hello.Usage.OutputTokens == 0 || len(hello.Decisions) != 0 {
			t.Errorf("%s: the first turn is described as %+v", order, hello)
		}
		denied := byID[res.TurnID]
		if denied.Status != transcript.StatusOK || len(denied.Decisions) != 1 ||
			denied.Decisions[0].Decision != transcript.VerdictDeny || denied.Decisions[0].Reason != "not today" {
			t.Errorf("%s: the denied turn is described as %+v", order, denied)
		}
	}
	// Newest first, one message a page: the newest page has the second
	// turn's end; the oldest page's turn is the first, whole.
	var pages []spool.MessagePage
	opt := spool.PageOptions{Limit: 1}
	for {
		p, err := s.Page(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
		if p.NextCursor == "" {
			break
		}
		opt.Cursor = p.NextCursor
	}
	newest := pages[0]
	if len(newest.Turns) == 0 || newest.Turns[len(newest.Turns)-1].TurnID != res.TurnID || newest.Turns[len(newest.Turns)-1].Status != transcript.StatusOK {
		t.Errorf("the newest page's turns: %+v", newest.Turns)
	}
	// Merged by turn, the pages say what one page of everything says.
	ended := map[string]transcript.Status{}
	for _, p := range pages {
		for _, ti := range p.Turns {
			if ti.Status != "" {
				ended[ti.TurnID] = ti.Status
			}
		}
	}
	if len(ended) != 2 || ended[first.TurnID] != transcript.StatusOK || ended[res.TurnID] != transcript.StatusOK {
		t.Errorf("the pages together say the turns ended %v", ended)
	}
}
