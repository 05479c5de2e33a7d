package spool_test

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store/memstore"
)

// The reads of a session (OpenSession, PendingApprovals, ToolMode,
// OpenTurn) answer while a turn of the same process runs on it, with what
// the transcript has, rather than after the turn: a web page asking for a
// session's approvals during an answer is not held for the answer's
// length.
func TestReadsDoNotWaitForTheTurn(t *testing.T) {
	ctx := context.Background()
	inModel, release := make(chan struct{}), make(chan struct{})
	m := echoScript(func(*model.Request) []model.Event {
		close(inModel)
		<-release
		return []model.Event{text("done")}
	})
	a, err := spool.New(spool.Config{Store: memstore.New(), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := session(t, a, ctx, "s1")
	turn := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, "hello")
		turn <- err
	}()
	<-inModel
	reads := make(chan error, 1)
	go func() {
		reads <- func() error {
			if _, err := a.OpenSession(ctx, "s1"); err != nil {
				return err
			}
			if p, err := s.PendingApprovals(ctx); err != nil || len(p) != 0 {
				t.Errorf("PendingApprovals = %v, %v; want none", p, err)
			}
			if _, err := s.ToolMode(ctx); err != nil {
				return err
			}
			return nil
		}()
	}()
	select {
	case err := <-reads:
		if err != nil {
			t.Fatalf("a read during the turn: %v", err)
		}
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the reads waited for the running turn")
	}
	close(release)
	if err := <-turn; err != nil {
		t.Fatal(err)
	}
}
