package channel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/server/channel/mock"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

func newAgent(t *testing.T, m model.Model) *spool.Agent {
	t.Helper()
	if m == nil {
		m = echo.New()
	}
	a, err := spool.New(spool.Config{Model: m, Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func connect(t *testing.T, a *spool.Agent) (*mock.Channel, *channel.AgentDispatcher) {
	t.Helper()
	ch := mock.New("test")
	d, err := channel.Connect(context.Background(), a, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ch.Close()
		d.Wait()
	})
	return ch, d
}

func TestAsk(t *testing.T) {
	ch, _ := connect(t, newAgent(t, nil))
	reply, err := ch.Ask(context.Background(), "s1", "hello there")
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "echo: hello there" || reply.Result.Status != transcript.StatusOK {
		t.Fatalf("reply %+v", reply)
	}
	var kinds []spool.EventKind
	for _, ev := range reply.Events {
		kinds = append(kinds, ev.Kind)
	}
	if fmt.Sprint(kinds) != "[turn_start step_start text text text step_end turn_end]" {
		t.Fatalf("events %v", kinds)
	}
	sent := ch.Sent()
	if len(sent) != len(reply.Events)+1 || !sent[len(sent)-1].Payload.Final || sent[0].Target.SessionID != "s1" {
		t.Fatalf("sent %+v", sent)
	}
	// The conversation goes on in the same session.
	reply, _ = ch.Ask(context.Background(), "s1", "again")
	if reply.Text != "echo: again" {
		t.Fatalf("reply %+v", reply)
	}
}

// Messages posted on one session are answered in the order posted, each
// with its own reply.
func TestFIFO(t *testing.T) {
	a := newAgent(t, echo.New(echo.WithDelay(time.Millisecond)))
	ch, _ := connect(t, a)
	var calls []*mock.Call
	for i := range 10 {
		c, err := ch.Post(context.Background(), channel.Inbound{Target: channel.Target{SessionID: "f"}, Text: fmt.Sprintf("m%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	for i, c := range calls {
		r, err := c.Wait(context.Background())
		if err != nil || r.Text != fmt.Sprintf("echo: m%d", i) {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	entries, _ := a.Store().Read(context.Background(), store.Key{Agent: a.Name(), ID: "f"})
	var got []string
	for _, e := range entries {
		if e.Type == transcript.TypeUserMessage {
			var m transcript.UserMessage
			e.DecodeData(&m)
			got = append(got, m.Text)
		}
	}
	if fmt.Sprint(got) != "[m0 m1 m2 m3 m4 m5 m6 m7 m8 m9]" {
		t.Fatalf("transcript order %v", got)
	}
}

// Different sessions run concurrently: each model call waits until the
// other session's has started, which serialized turns would never do.
func TestSessionsConcurrent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	m := echo.New(echo.WithScript(func(r *model.Request) []model.Event {
		arrived.Done()
		select {
		case <-both:
		case <-ctx.Done():
		}
		return echo.Reply(r)
	}))
	ch, _ := connect(t, newAgent(t, m))
	c1, _ := ch.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: "a"}, Text: "x"})
	c2, _ := ch.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: "b"}, Text: "y"})
	for _, c := range []*mock.Call{c1, c2} {
		if r, err := c.Wait(ctx); err != nil || r.Result.Status != transcript.StatusOK {
			t.Fatalf("%+v %v", r, err)
		}
	}
}

// Closing the channel rejects the requests it holds, the one running and
// those queued behind it, with ErrClosed, and refuses new ones; the
// running turn is recorded cancelled.
func TestCloseRejectsPending(t *testing.T) {
	started := make(chan struct{}, 4)
	m := echo.New(echo.WithScript(func(r *model.Request) []model.Event {
		started <- struct{}{}
		return echo.Reply(r)
	}), echo.WithDelay(20*time.Millisecond))
	a := newAgent(t, m)
	ch, d := connect(t, a)
	ctx := context.Background()
	long := "one two three four five six seven eight nine ten eleven twelve"
	first, _ := ch.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: "c"}, Text: long})
	second, _ := ch.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: "c"}, Text: "queued"})
	<-started
	ch.Close()
	for _, c := range []*mock.Call{first, second} {
		if _, err := c.Wait(ctx); !errors.Is(err, channel.ErrClosed) {
			t.Fatalf("pending call: %v, want ErrClosed", err)
		}
	}
	if _, err := ch.Ask(ctx, "c", "after"); !errors.Is(err, channel.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	d.Wait()
	entries, _ := a.Store().Read(ctx, store.Key{Agent: a.Name(), ID: "c"})
	var ends []transcript.Status
	for _, e := range entries {
		if e.Type == transcript.TypeTurnEnd {
			ends = append(ends, e.Status)
		}
	}
	// The first turn stopped at its next event; the queued one either
	// never started or stopped the same way.
	if len(ends) == 0 || ends[0] != transcript.StatusCancelled {
		t.Fatalf("turn ends %v", ends)
	}
	for _, s := range ends {
		if s != transcript.StatusCancelled {
			t.Fatalf("turn ends %v", ends)
		}
	}
}

// A cancelled request's turn stops and is recorded cancelled.
func TestCancelledRequest(t *testing.T) {
	a := newAgent(t, echo.New(echo.WithDelay(20*time.Millisecond)))
	ch, d := connect(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	call, _ := ch.Post(ctx, channel.Inbound{Target: channel.Target{SessionID: "x"}, Text: "a b c d e f g h i j"})
	time.Sleep(50 * time.Millisecond)
	cancel()
	r, err := call.Wait(context.Background())
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	d.Wait()
	if r.Result != nil && r.Result.Status != transcript.StatusCancelled {
		t.Fatalf("result %+v", r.Result)
	}
	entries, _ := a.Store().Read(context.Background(), store.Key{Agent: a.Name(), ID: "x"})
	if n := len(entries); n == 0 || entries[n-1].Status != transcript.StatusCancelled {
		t.Fatalf("transcript %v", entries)
	}
}

func TestUserTargets(t *testing.T) {
	a, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New(), Scope: spool.ScopeUser})
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := connect(t, a)
	for _, u := range []string{"ann", "ben"} {
		c, _ := ch.Post(context.Background(), channel.Inbound{Target: channel.Target{SessionID: "same", User: u}, Text: "hi " + u})
		if r, err := c.Wait(context.Background()); err != nil || r.Text != "echo: hi "+u {
			t.Fatalf("%s: %+v %v", u, r, err)
		}
	}
	// Without a user, a user-scoped agent refuses the message.
	if _, err := ch.Ask(context.Background(), "same", "anon"); !errors.Is(err, spool.ErrNoUser) {
		t.Fatalf("no user: %v", err)
	}
}
