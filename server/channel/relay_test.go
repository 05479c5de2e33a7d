package channel_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server/channel"
	"github.com/spool-go/spool/transcript"
)

// inbox is a Dispatcher that keeps what it is given, so a test plays the
// turn itself through Relay.Send.
type inbox struct {
	mu  sync.Mutex
	ins []channel.Inbound
}

func (d *inbox) Dispatch(ctx context.Context, in channel.Inbound) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ins = append(d.ins, in)
	return nil
}

func (d *inbox) last(t *testing.T) channel.Inbound {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ins) == 0 {
		t.Fatal("nothing dispatched")
	}
	return d.ins[len(d.ins)-1]
}

// slowConv is a platform that takes its time over every call (delay) or,
// with hang, never answers until the call's context ends.
type slowConv struct {
	delay  time.Duration
	hang   bool
	refuse string // a post or edit whose text has it is refused (400)

	mu    sync.Mutex
	calls []string
	msgs  map[string]string
	n     int
}

func (c *slowConv) wait(ctx context.Context) error {
	if c.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(c.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *slowConv) record(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

func (c *slowConv) refused(text string) error {
	if c.refuse != "" && strings.Contains(text, c.refuse) {
		c.record("refused")
		return &channel.PlatformError{Status: 400, Code: "refused"}
	}
	return nil
}

func (c *slowConv) Post(ctx context.Context, text string) (string, error) {
	if err := c.wait(ctx); err != nil {
		return "", err
	}
	if err := c.refused(text); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	id := fmt.Sprint(c.n)
	if c.msgs == nil {
		c.msgs = map[string]string{}
	}
	c.msgs[id] = text
	c.calls = append(c.calls, "post "+id)
	return id, nil
}

func (c *slowConv) Edit(ctx context.Context, id, text string) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	if err := c.refused(text); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs[id] = text
	c.calls = append(c.calls, "edit "+id)
	return nil
}

func (c *slowConv) Ask(ctx context.Context, q channel.Question) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	c.record("ask " + q.Approval.ID)
	return nil
}

func (c *slowConv) Decided(ctx context.Context, d channel.Decided) error {
	c.record("decided")
	return nil
}

func (c *slowConv) Tell(ctx context.Context, text string) error {
	c.record("tell")
	return nil
}

func (c *slowConv) snapshot() ([]string, map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	msgs := map[string]string{}
	for k, v := range c.msgs {
		msgs[k] = v
	}
	return append([]string(nil), c.calls...), msgs
}

func newRelay(t *testing.T, p channel.Platform) (*channel.Relay, *inbox) {
	t.Helper()
	if p.Name == "" {
		p.Name = "fake"
	}
	p.Logger = slog.New(slog.DiscardHandler)
	r := channel.NewRelay(p)
	d := &inbox{}
	if err := r.Listen(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, d
}

func text(s string) *spool.Event { return &spool.Event{Kind: spool.EventText, Text: s} }

var okResult = &spool.Result{Status: transcript.StatusOK}

// A model that streams much faster than the platform takes edits gets
// its deltas coalesced: once behind, the outbox edits the message with
// all the text that came meanwhile, so the platform sees a few edits, not
// one per delta (which kept a minute's answer going out for an hour, and
// its queue growing with every delta).
func TestRelayCoalescesEditsWhenBehind(t *testing.T) {
	conv := &slowConv{delay: 20 * time.Millisecond}
	r, d := newRelay(t, channel.Platform{Limit: 100000, EditInterval: time.Millisecond})
	if err := r.Receive(channel.Message{Conversation: "c", User: "u", Text: "hi"}, conv); err != nil {
		t.Fatal(err)
	}
	in := d.last(t)
	ctx := context.Background()
	var want strings.Builder
	const deltas = 300
	for i := range deltas {
		s := fmt.Sprintf("w%d ", i)
		want.WriteString(s)
		if err := r.Send(ctx, in.Target, channel.Payload{Event: text(s), Origin: in.Origin}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
	calls, msgs := conv.snapshot()
	if got := msgs["1"]; got != strings.TrimSpace(want.String()) && got != want.String() {
		t.Fatalf("the message reads %q", got)
	}
	if len(calls) > 10 {
		t.Fatalf("%d calls for %d deltas (the final waited %v); the edits were not coalesced", len(calls), deltas, time.Since(start).Round(time.Millisecond))
	}
}

// Close bounds what is left of every reply: the platform calls still
// running and those still queued end within the close grace, however
// long the platform hangs, so a server's shutdown does not wait for them
// (a call begun before Close was given its two minutes).
func TestRelayCloseBoundsTheOutbox(t *testing.T) {
	conv := &slowConv{hang: true}
	r, d := newRelay(t, channel.Platform{Limit: 100000, EditInterval: time.Millisecond})
	channel.SetCloseGrace(r, 200*time.Millisecond)
	if err := r.Receive(channel.Message{Conversation: "c", User: "u", Text: "hi"}, conv); err != nil {
		t.Fatal(err)
	}
	in := d.last(t)
	ctx := context.Background()
	r.Send(ctx, in.Target, channel.Payload{Event: text("the answer"), Origin: in.Origin})
	time.Sleep(50 * time.Millisecond) // its post is under way, and hangs
	for i := range 3 {
		r.Send(ctx, in.Target, channel.Payload{Event: &spool.Event{Kind: spool.EventStepEnd}, Origin: in.Origin})
		r.Send(ctx, in.Target, channel.Payload{Event: text(fmt.Sprint(" more ", i)), Origin: in.Origin})
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		r.Send(ctx, in.Target, channel.Payload{Final: true, Err: context.Canceled, Origin: in.Origin})
	}()
	r.Close()
	start := time.Now()
	select {
	case <-sent:
	case <-time.After(3 * time.Second):
		t.Fatal("the final payload still waits on the platform 3 s after Close")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("the final payload returned %v after Close, with a grace of 200 ms", waited)
	}
}

// Text the platform refused before an approval's buttons is said not to
// have been sent, before the buttons: the turn pauses there, and its end
// (awaiting approval) says nothing, so the buttons came with no word of
// what the model said about them.
func TestRelayRefusedBeforeApprovalSaidSo(t *testing.T) {
	conv := &slowConv{refuse: "I will save"}
	r, d := newRelay(t, channel.Platform{EditInterval: time.Hour})
	if err := r.Receive(channel.Message{Conversation: "c", User: "u", Text: "save it"}, conv); err != nil {
		t.Fatal(err)
	}
	in := d.last(t)
	ctx := context.Background()
	r.Send(ctx, in.Target, channel.Payload{Event: text("I will save the note."), Origin: in.Origin})
	r.Send(ctx, in.Target, channel.Payload{Event: &spool.Event{Kind: spool.EventApprovalRequest, Approval: &spool.Approval{ID: "ap1"}}, Origin: in.Origin})
	r.Send(ctx, in.Target, channel.Payload{Final: true, Result: &spool.Result{Status: spool.StatusAwaitingApproval}, Origin: in.Origin})
	calls, msgs := conv.snapshot()
	if fmt.Sprint(calls) != "[refused post 1 ask ap1]" || msgs["1"] != "Sorry, the answer could not be sent here." {
		t.Fatalf("calls %v, messages %q", calls, msgs)
	}
}

// Text that came while the platform was behind is shown once the outbox
// catches up, whatever event it caught up on: here a tool's result, while
// the tool's next step may be long in coming.
func TestRelayShowsTextWhenCaughtUp(t *testing.T) {
	conv := &slowConv{delay: 30 * time.Millisecond}
	r, d := newRelay(t, channel.Platform{EditInterval: time.Millisecond})
	if err := r.Receive(channel.Message{Conversation: "c", User: "u", Text: "hi"}, conv); err != nil {
		t.Fatal(err)
	}
	in := d.last(t)
	ctx := context.Background()
	send := func(ev *spool.Event) { r.Send(ctx, in.Target, channel.Payload{Event: ev, Origin: in.Origin}) }
	send(text("Looking"))
	time.Sleep(10 * time.Millisecond) // its post is under way
	send(text(" it up."))
	send(&spool.Event{Kind: spool.EventToolCall, ToolCall: &transcript.ToolCall{ID: "t1", Name: "lookup"}})
	send(&spool.Event{Kind: spool.EventStepEnd})
	send(&spool.Event{Kind: spool.EventToolResult, ToolResult: &transcript.ToolResult{CallID: "t1"}})
	time.Sleep(300 * time.Millisecond) // the tool's next step is slow
	if _, msgs := conv.snapshot(); msgs["1"] != "Looking it up." {
		t.Fatalf("while the next step is awaited the message reads %q", msgs["1"])
	}
	r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
}
