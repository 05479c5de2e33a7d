package spool_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

func TestCallsOnOneSessionNeverInterleave(t *testing.T) {
	ctx := t.Context()
	a := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(100 * time.Microsecond))})
	s := session(t, a, ctx, "busy")
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Send(ctx, fmt.Sprintf("prompt %d", i))
			if err == nil && res.Text != fmt.Sprintf("echo: prompt %d", i) {
				err = fmt.Errorf("prompt %d answered %q, want %q", i, res.Text, fmt.Sprintf("echo: prompt %d", i))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := s.Transcript(ctx)
	checkWellFormed(t, entries)
	if len(entries) != 150 {
		t.Fatalf("%d entries, want 150", len(entries))
	}
}

// TestDifferentSessionsRunConcurrently proves overlap without timing: each
// session's model waits until the other's has started. Serialized, they
// would never both arrive and the test would fail at its deadline.
func TestDifferentSessionsRunConcurrently(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	m := echoScript(func(req *model.Request) []model.Event {
		arrived.Done()
		select {
		case <-both:
		case <-ctx.Done():
		}
		return []model.Event{text("done")}
	})
	a := newAgent(t, spool.Config{Model: m})
	var wg sync.WaitGroup
	for _, id := range []string{"one", "two"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := session(t, a, ctx, id)
			if _, err := s.Send(ctx, "go"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-both:
	default:
		t.Fatal("the two sessions never ran at the same time")
	}
}

func TestTwoAgentsOnOneStoreKeepOrder(t *testing.T) {
	for name, st := range map[string]func() storeT{
		"with the store's lock":   func() storeT { return memstore.New() },
		"conditional append only": func() storeT { return plainStore{memstore.New()} },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			shared := st()
			agents := []*spool.Agent{
				newAgent(t, spool.Config{Store: shared, Model: echo.New(echo.WithDelay(200 * time.Microsecond))}),
				newAgent(t, spool.Config{Store: shared, Model: echo.New(echo.WithDelay(200 * time.Microsecond))}),
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			ok, busy := 0, 0
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, _ := agents[i%2].Session(ctx, "contended")
					_, err := s.Send(ctx, fmt.Sprintf("p%d", i))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, spool.ErrBusy):
						busy++
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			s, _ := agents[0].Session(ctx, "contended")
			entries, _ := s.Transcript(ctx)
			checkWellFormed(t, entries)
			ends := 0
			for _, e := range entries {
				if e.Type == transcript.TypeTurnEnd {
					ends++
				}
			}
			if ends != ok || ok == 0 {
				t.Fatalf("%d turns ended in the transcript and %d calls succeeded (%d busy): want as many ends as successes, and some", ends, ok, busy)
			}
		})
	}
}

// TestStateFollowsOtherWriters checks that an agent sees what another agent
// on the same store appended since it last looked: its cached state is
// brought up to date from the new entries only.
func TestStateFollowsOtherWriters(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	a := newAgent(t, spool.Config{Store: st, Tools: approvalTools(nil)})
	b := newAgent(t, spool.Config{Store: st, Tools: approvalTools(nil)})
	sa := session(t, a, ctx, "shared")
	sb := session(t, b, ctx, "shared")
	if _, err := sa.Send(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Send(ctx, `/call delete_order {"order":1}`)
	if err != nil || res.Status != spool.StatusAwaitingApproval {
		t.Fatalf("Send = %+v, %v; want it awaiting approval", res, err)
	}
	pend, err := sa.PendingApprovals(ctx)
	if err != nil || len(pend) != 1 || pend[0].ID != res.Pending[0].ID {
		t.Fatalf("a's PendingApprovals = %+v, %v; want the approval b's call is waiting on", pend, err)
	}
	if _, err := sa.Approve(ctx, pend[0].ID, transcript.ApprovalScopeSession); err != nil {
		t.Fatal(err)
	}
	if err := sb.SetToolMode(ctx, transcript.ToolModeAuto); err != nil {
		t.Fatal(err)
	}
	if m, err := sa.ToolMode(ctx); err != nil || m != transcript.ToolModeAuto {
		t.Fatalf("a's ToolMode after b set auto = %q, %v; want auto", m, err)
	}
	entries, _ := sa.Transcript(ctx)
	checkWellFormed(t, entries)
}

// readCounter is a memory store that counts the reads of each kind.
type readCounter struct {
	*memstore.Store
	mu                   sync.Mutex
	reads, ranges, tails int
}

func (s *readCounter) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.Read(ctx, k)
}

func (s *readCounter) ReadRange(ctx context.Context, k store.Key, start, end int) ([]transcript.Entry, int, error) {
	s.mu.Lock()
	s.ranges++
	s.mu.Unlock()
	return s.Store.ReadRange(ctx, k, start, end)
}

func (s *readCounter) ReadTail(ctx context.Context, k store.Key, n int) ([]transcript.Entry, int, error) {
	s.mu.Lock()
	s.tails++
	s.mu.Unlock()
	return s.Store.ReadTail(ctx, k, n)
}

func (s *readCounter) counts() [3]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return [3]int{s.reads, s.ranges, s.tails}
}

// sentModel answers "ok" and records how many messages it was sent.
type sentModel struct{ sent *int }

func (m sentModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	*m.sent = len(req.Messages)
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{Kind: model.EventText, Text: "ok"}, nil)
	}
}

// A turn on a session another agent on the store (another replica)
// appended to since this one last saw it reads only what was appended,
// in one read that also tells whether anything was (a session moving
// between replicas used to take a read of the newest entry and then
// another), and its model gets the whole history, the other agent's turn
// included. One where nothing changed reads the newest entry alone.
func TestStateFollowsOtherWritersInOneRead(t *testing.T) {
	ctx := t.Context()
	st := &readCounter{Store: memstore.New()}
	var sentA, sentB int
	a := newAgent(t, spool.Config{Store: st, Model: sentModel{&sentA}})
	b := newAgent(t, spool.Config{Store: st, Model: sentModel{&sentB}})
	sa, sb := session(t, a, ctx, "shared"), session(t, b, ctx, "shared")
	for _, s := range []*spool.Session{sa, sb} {
		if _, err := s.Send(ctx, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := sa.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := st.counts()
	if _, err := sa.Send(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if got := st.counts(); got != [3]int{before[0], before[1] + 1, before[2]} {
		t.Fatalf("reads, range reads and tail reads of the turn: %v, from %v; want one range read", got, before)
	}
	if sentA != len(hist)+1 {
		t.Fatalf("the model got %d messages; the history has %d, and the prompt", sentA, len(hist))
	}
	before = st.counts()
	if _, err := sa.Send(ctx, "once more"); err != nil {
		t.Fatal(err)
	}
	if got := st.counts(); got != [3]int{before[0], before[1] + 1, before[2]} {
		t.Fatalf("reads of a turn on a session nobody else wrote: %v, from %v; want one range read", got, before)
	}
}
