package channel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/mock"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// Two dispatchers sharing a store, as two replicas would, take a delivery
// once between them, however many times each is handed it at once.
func TestDeliveryOnceAcrossDispatchers(t *testing.T) {
	st := memstore.New()
	var ds []*channel.AgentDispatcher
	for range 2 {
		a := newAgentOn(t, st)
		d := channel.NewDispatcher(a, mock.New("m"))
		ds = append(ds, d)
	}
	at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	for round := range 5 {
		dv := &channel.Delivery{ID: fmt.Sprintf("slack.T1.C1.%d", round), Time: at}
		var mu sync.Mutex
		taken, dup := 0, 0
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := channel.Inbound{Target: channel.Target{SessionID: "s"}, Text: "x", Delivery: dv}
				// The turn itself does not matter here: the mock channel
				// has no call waiting, so it stops at its first event.
				err := ds[i%2].Dispatch(context.Background(), in)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					taken++
				case errors.Is(err, channel.ErrDuplicate):
					dup++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if taken != 1 || dup != 7 {
			t.Fatalf("round %d: taken %d, duplicates %d", round, taken, dup)
		}
	}
	for _, d := range ds {
		d.Wait()
	}
	// The records are in the store, where the next process finds them.
	page, err := st.List(context.Background(), store.Namespace{Agent: channel.LedgerAgent, Owner: "default"}, store.ListOptions{})
	if err != nil || len(page.Sessions) == 0 {
		t.Fatalf("%v %v", page.Sessions, err)
	}
	d3 := channel.NewDispatcher(newAgentOn(t, st), mock.New("m"))
	if err := d3.Dispatch(context.Background(), channel.Inbound{Target: channel.Target{SessionID: "s"}, Delivery: &channel.Delivery{ID: "slack.T1.C1.0", Time: at}}); !errors.Is(err, channel.ErrDuplicate) {
		t.Fatalf("a fresh dispatcher took a recorded delivery: %v", err)
	}
	// A delivery id that cannot be recorded is refused.
	if err := d3.Dispatch(context.Background(), channel.Inbound{Target: channel.Target{SessionID: "s"}, Delivery: &channel.Delivery{ID: "with space"}}); err == nil {
		t.Fatal("a bad delivery id was taken")
	}
}

func newAgentOn(t *testing.T, st store.Store) *spool.Agent {
	t.Helper()
	a, err := spool.New(spool.Config{Model: echo.New(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
