package spool_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// A delegate's turn holds the store's lock on its session: another
// process's turn on that session waits for the delegation to end, where,
// finding the delegate's turn open and no lock held, it took it for a dead
// one and closed it.
func TestDelegateTurnHoldsTheLock(t *testing.T) {
	for _, name := range teststores.Names {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := teststores.All()[name](t)
			gate := make(chan struct{})
			researcher := newAgent(t, spool.Config{Name: "researcher", Store: st, Model: heldModel{gate}})
			lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{
				researcher.AsTool("ask_researcher", "Ask the researcher."),
			}})
			s := session(t, lead, ctx, "case-1")
			type result struct {
				res *spool.Result
				err error
			}
			led := make(chan result, 1)
			go func() {
				res, err := s.Send(ctx, `/call ask_researcher {"prompt":"find order 7"}`)
				led <- result{res, err}
			}()
			dlg := store.Key{Agent: "researcher", ID: spool.DelegateSessionID(s.Key())}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if entries, _ := st.Read(ctx, dlg); len(entries) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the delegate's prompt never reached the store")
				}
			}
			// Another process serving the researcher, on the same store.
			other := newAgent(t, spool.Config{Name: "researcher", Store: st})
			os := session(t, other, ctx, dlg.ID)
			sent := make(chan result, 1)
			go func() {
				res, err := os.Send(ctx, "and order 8")
				sent <- result{res, err}
			}()
			select {
			case r := <-sent:
				t.Fatalf("another process's turn ran while the delegation held the session: %+v, %v", r.res, r.err)
			case <-time.After(300 * time.Millisecond):
			}
			close(gate)
			r := <-led
			if r.err != nil || r.res.Status != transcript.StatusOK || !strings.Contains(r.res.Text, `"status":"ok"`) {
				t.Fatalf("the delegating turn = %+v, %v; want ok with the delegate's ok answer", r.res, r.err)
			}
			r = <-sent
			if r.err != nil || r.res.Status != transcript.StatusOK {
				t.Fatalf("the other process's turn after the delegation = %+v, %v; want ok", r.res, r.err)
			}
			entries, err := st.Read(ctx, dlg)
			if err != nil {
				t.Fatal(err)
			}
			checkWellFormed(t, entries)
			checkEnded(t, entries)
			for _, e := range entries {
				if e.Type == transcript.TypeTurnEnd && e.Status != transcript.StatusOK {
					t.Fatalf("a turn of the delegate's session ended %s: %v", e.Status, types(entries))
				}
			}
		})
	}
}

// Delegations hold two session locks at once, the caller's and the
// delegate's; on Postgres, more delegating turns than lock connections
// must not wait on each other.
func TestManyDelegationsOnFewLockConnections(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, teststores.PostgresURL(t)+"&lock_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.(io.Closer).Close() })
	researcher := newAgent(t, spool.Config{Name: "researcher", Store: st})
	lead := newAgent(t, spool.Config{Name: "lead", Store: st, Tools: []*tool.Tool{
		researcher.AsTool("ask_researcher", "Ask the researcher."),
	}})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			res, err := session(t, lead, ctx, fmt.Sprint("case-", i)).Send(ctx, `/call ask_researcher {"prompt":"find order 7"}`)
			if err != nil || res.Status != transcript.StatusOK {
				t.Errorf("delegating turn %d = %+v, %v; want ok", i, res, err)
			}
		})
	}
	wg.Wait()
}
