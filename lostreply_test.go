package spool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// lostReplyStore appends and then, for the append numbered lose (counting
// from 1 after arming), reports the failure a store gives when the
// connection broke after the server committed: the entry is stored, the
// caller is told it failed.
type lostReplyStore struct {
	store.Store
	n, lose atomic.Int32
}

var errLostReply = errors.New("lostreply: the connection failed after the commit; outcome unknown")

func (l *lostReplyStore) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	if err := l.Store.Append(ctx, k, e); err != nil {
		return err
	}
	if l.lose.Load() > 0 && l.n.Add(1) == l.lose.Load() {
		return errLostReply
	}
	return nil
}

// An append committed whose reply was lost fails its turn; the next turn
// on the session catches its state up, closes the failed turn and runs,
// whichever of the turn's appends it was.
func TestLostReplyNextTurnRecovers(t *testing.T) {
	ctx := t.Context()
	for lose := int32(1); lose <= 4; lose++ {
		t.Run(fmt.Sprint(lose), func(t *testing.T) {
			st := &lostReplyStore{Store: memstore.New()}
			a := newAgent(t, spool.Config{Store: st})
			s := session(t, a, ctx, "lost")
			if _, err := s.Send(ctx, "one"); err != nil {
				t.Fatal(err)
			}
			st.lose.Store(lose)
			_, err := s.Send(ctx, "two")
			st.lose.Store(0)
			res, err2 := s.Send(ctx, "three")
			if err2 != nil || res.Status != transcript.StatusOK {
				t.Fatalf("the turn after one whose append lost its reply (%v) = %+v, %v; want ok", err, res, err2)
			}
			entries, err := st.Read(ctx, s.Key())
			if err != nil {
				t.Fatal(err)
			}
			checkWellFormed(t, entries)
			checkEnded(t, entries)
		})
	}
}

// The same for an approval's decision: stored, its reply lost, the turn
// it resumed must not hold the session until StaleTurn.
func TestLostReplyOfADecision(t *testing.T) {
	ctx := t.Context()
	st := &lostReplyStore{Store: memstore.New()}
	a := newAgent(t, spool.Config{Store: st, Tools: approvalTools(nil)})
	s := session(t, a, ctx, "lost")
	res, err := s.Send(ctx, `/call delete_order {"order":1042}`)
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("Send = %+v, %v; want one approval pending", res, err)
	}
	st.lose.Store(1)
	_, err = s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
	st.lose.Store(0)
	if res, err2 := s.Send(ctx, "next"); err2 != nil || res.Status != transcript.StatusOK {
		t.Fatalf("the turn after a decision whose reply was lost (%v) = %+v, %v; want ok", err, res, err2)
	}
	entries, err := st.Read(ctx, s.Key())
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
}
