package spool_test

import (
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

func TestRename(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	a := newAgent(t, spool.Config{Tools: approvalTools(&calls)})
	s := session(t, a, ctx, "r")
	if err := s.Rename(ctx, "Before anything"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Rename of a session with no entry = %v, want store.ErrNotFound", err)
	}
	if _, err := a.SessionInfo(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a refused Rename the session exists: %v", err)
	}
	if _, err := s.Send(ctx, "Where is order 1042?"); err != nil {
		t.Fatal(err)
	}
	before, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(ctx, " \n\t"); !errors.Is(err, spool.ErrEmptyTitle) {
		t.Fatalf("Rename to a blank title = %v, want ErrEmptyTitle", err)
	}
	if err := s.Rename(ctx, "  Order\n1042 "); err != nil {
		t.Fatal(err)
	}
	info, err := a.SessionInfo(ctx, "r")
	if err != nil || info.Title != "Order 1042" {
		t.Fatalf("after Rename, SessionInfo = %+v, %v; want the title \"Order 1042\"", info, err)
	}
	entries, _ := s.Transcript(ctx)
	if last := entries[len(entries)-1]; last.Type != transcript.TypeSessionTitle {
		t.Fatalf("Rename appended %s, want %s", last.Type, transcript.TypeSessionTitle)
	}
	checkWellFormed(t, entries)
	after, err := s.History(ctx)
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Fatalf("a rename changed the history: %+v, then %+v (%v)", before, after, err)
	}
	// Another process sees it: a fresh agent on the same store.
	b := newAgent(t, spool.Config{Store: a.Store()})
	if info, err := b.SessionInfo(ctx, "r"); err != nil || info.Title != "Order 1042" {
		t.Fatalf("another agent sees %+v, %v", info, err)
	}

	// Not inside a turn waiting on an approval.
	if _, err := s.Send(ctx, `/call delete_order {"order":9}`); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(ctx, "Mid-approval"); !errors.Is(err, spool.ErrApprovalPending) {
		t.Fatalf("Rename while an approval waits = %v, want ErrApprovalPending", err)
	}
}
