package channel_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
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
	// fail, when set, is asked first about every post (id "") and edit:
	// the error it returns fails the call.
	fail func(op, id, text string) error

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

// failed asks fail about a call, and records the failure.
func (c *slowConv) failed(op, id, text string) error {
	if c.fail == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.fail(op, id, text)
	if err != nil {
		c.calls = append(c.calls, strings.TrimSpace("failed "+op+" "+id))
	}
	return err
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
	if err := c.failed("post", "", text); err != nil {
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
	if err := c.failed("edit", id, text); err != nil {
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

// receive has r take a message in conv, and returns what it dispatched:
// the reply's target and origin.
func receive(t *testing.T, r *channel.Relay, d *inbox, conv channel.Conversation) channel.Inbound {
	t.Helper()
	if err := r.Receive(channel.Message{Conversation: "c", User: "u", Text: "hi"}, conv); err != nil {
		t.Fatal(err)
	}
	return d.last(t)
}

func newRelay(t *testing.T, p channel.Platform) (*channel.Relay, *inbox) {
	t.Helper()
	if p.Name == "" {
		p.Name = "fake"
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
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
	in := receive(t, r, d, conv)
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
	in := receive(t, r, d, conv)
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
	in := receive(t, r, d, conv)
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

// waitCalls waits until conv has made at least n calls.
func (c *slowConv) waitCalls(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		calls, _ := c.snapshot()
		if len(calls) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %d calls; made %v", n, calls)
		}
		time.Sleep(time.Millisecond)
	}
}

// countWarnings is a slog handler counting the warnings logged.
type countWarnings struct{ n atomic.Int32 }

func (h *countWarnings) Enabled(context.Context, slog.Level) bool { return true }
func (h *countWarnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h *countWarnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countWarnings) WithGroup(string) slog.Handler      { return h }

// A post the platform refused for good (the channel deleted, the bot
// removed, Slack's channel_not_found) is not tried again at each update
// of the answer: a long answer made one refused call, and logged one
// warning, per EditInterval. Only the note that says so is tried, once.
func TestRelayRefusedPostNotRepeated(t *testing.T) {
	for _, refusal := range []channel.PlatformError{
		{Status: 404, Code: "discord_10003"},
		{Status: 403},
		{Status: 400, Code: "bad_request"},
		{Status: 200, Code: "channel_not_found"},
		{Status: 200, Code: "not_in_channel"},
		{Status: 200, Code: "is_archived"},
	} {
		t.Run(refusal.Error(), func(t *testing.T) {
			conv := &slowConv{fail: func(op, id, text string) error {
				if strings.Contains(text, "Lorem") {
					return &refusal
				}
				return nil
			}}
			warnings := &countWarnings{}
			r, d := newRelay(t, channel.Platform{EditInterval: time.Nanosecond, Logger: slog.New(warnings)})
			in := receive(t, r, d, conv)
			ctx := context.Background()
			for i := range 20 {
				r.Send(ctx, in.Target, channel.Payload{Event: text(fmt.Sprint("Lorem ipsum ", i, ". ")), Origin: in.Origin})
				r.Send(ctx, in.Target, channel.Payload{Event: &spool.Event{Kind: spool.EventStepEnd}, Origin: in.Origin})
				time.Sleep(2 * time.Millisecond) // flushed on its own
			}
			r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
			calls, msgs := conv.snapshot()
			if fmt.Sprint(calls) != "[failed post post 1]" || msgs["1"] != "Sorry, the answer could not be sent here." {
				t.Fatalf("calls %v, messages %q", calls, msgs)
			}
			if n := warnings.n.Load(); n != 1 {
				t.Fatalf("%d warnings logged", n)
			}
		})
	}
}

// A post or edit that failed for now (a 5xx after Transport's retries, a
// 429 too long to wait, Slack's ratelimited, no answer) is tried again at
// the next update: the platform may take it then.
func TestRelayFailedForNowTriedAgain(t *testing.T) {
	for _, failure := range []error{
		&channel.PlatformError{Status: 502},
		&channel.PlatformError{Status: 429, Code: "ratelimited"},
		&channel.PlatformError{Status: 408},
		&channel.PlatformError{Status: 200, Code: "internal_error"},
		&channel.PlatformError{Status: 200, Code: "ratelimited"},
		&url.Error{Op: "Post", URL: "https://platform.example", Err: errors.New("connection refused")},
		context.DeadlineExceeded,
	} {
		t.Run(failure.Error(), func(t *testing.T) {
			var failed atomic.Int32
			conv := &slowConv{fail: func(op, id, text string) error {
				// The first post and the first edit fail.
				if strings.Contains(text, "Two") == (op == "edit") && failed.Load() < 2 {
					failed.Add(1)
					return failure
				}
				return nil
			}}
			r, d := newRelay(t, channel.Platform{EditInterval: time.Nanosecond})
			in := receive(t, r, d, conv)
			ctx := context.Background()
			send := func(s string, calls int) {
				r.Send(ctx, in.Target, channel.Payload{Event: text(s), Origin: in.Origin})
				conv.waitCalls(t, calls)
			}
			send("One.", 1)    // failed post
			send(" Two.", 2)   // post 1
			send(" Three.", 3) // failed edit 1
			send(" Four.", 4)  // edit 1
			r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
			calls, msgs := conv.snapshot()
			if fmt.Sprint(calls) != "[failed post post 1 failed edit 1 edit 1]" || msgs["1"] != "One. Two. Three. Four." {
				t.Fatalf("calls %v, messages %q", calls, msgs)
			}
		})
	}
}

// An edit of a message a person deleted (ErrMessageGone) posts its text
// as a new message, edited from then on: every edit of the deleted one
// was refused, and the rest of the answer lost.
func TestRelayDeletedMessagePostedAnew(t *testing.T) {
	conv := &slowConv{fail: func(op, id, text string) error {
		if op == "edit" && id == "1" {
			return fmt.Errorf("%w: %w", channel.ErrMessageGone, &channel.PlatformError{Status: 404, Code: "discord_10008"})
		}
		return nil
	}}
	r, d := newRelay(t, channel.Platform{EditInterval: time.Nanosecond})
	in := receive(t, r, d, conv)
	ctx := context.Background()
	send := func(s string, calls int) {
		r.Send(ctx, in.Target, channel.Payload{Event: text(s), Origin: in.Origin})
		conv.waitCalls(t, calls)
	}
	send("One.", 1)    // post 1, deleted at once
	send(" Two.", 3)   // failed edit 1, post 2
	send(" Three.", 4) // edit 2
	r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
	calls, msgs := conv.snapshot()
	if fmt.Sprint(calls) != "[post 1 failed edit 1 post 2 edit 2]" || msgs["2"] != "One. Two. Three." {
		t.Fatalf("calls %v, messages %q", calls, msgs)
	}
}

// An edit refused for good for another reason (the text refused, the
// message no longer editable) is not tried again at each update; the
// answer is said not to have been sent whole.
func TestRelayRefusedEditNotRepeated(t *testing.T) {
	conv := &slowConv{fail: func(op, id, text string) error {
		if op == "edit" {
			return &channel.PlatformError{Status: 200, Code: "edit_window_closed"}
		}
		return nil
	}}
	r, d := newRelay(t, channel.Platform{EditInterval: time.Nanosecond})
	in := receive(t, r, d, conv)
	ctx := context.Background()
	r.Send(ctx, in.Target, channel.Payload{Event: text("Start."), Origin: in.Origin})
	conv.waitCalls(t, 1)
	for i := range 20 {
		r.Send(ctx, in.Target, channel.Payload{Event: text(fmt.Sprint(" More ", i, ".")), Origin: in.Origin})
		time.Sleep(2 * time.Millisecond) // flushed on its own
	}
	r.Send(ctx, in.Target, channel.Payload{Final: true, Result: okResult, Origin: in.Origin})
	calls, msgs := conv.snapshot()
	if fmt.Sprint(calls) != "[post 1 failed edit 1 post 2]" || msgs["2"] != "(the rest of this answer could not be sent here)" {
		t.Fatalf("calls %v, messages %q", calls, msgs)
	}
}

func TestPlatformErrorPermanent(t *testing.T) {
	for _, c := range []struct {
		err  channel.PlatformError
		want bool
	}{
		{channel.PlatformError{Status: 400}, true},
		{channel.PlatformError{Status: 401}, true},
		{channel.PlatformError{Status: 403, Code: "forbidden"}, true},
		{channel.PlatformError{Status: 404, Code: "discord_10008"}, true},
		{channel.PlatformError{Status: 499}, true},
		{channel.PlatformError{Status: 408}, false},
		{channel.PlatformError{Status: 429, Code: "ratelimited"}, false},
		{channel.PlatformError{Status: 500}, false},
		{channel.PlatformError{Status: 503}, false},
		{channel.PlatformError{Status: 0}, false},
		{channel.PlatformError{Status: 200, Code: "channel_not_found"}, true},
		{channel.PlatformError{Status: 200, Code: "message_not_found"}, true},
		{channel.PlatformError{Status: 200, Code: "invalid_auth"}, true},
		{channel.PlatformError{Status: 200, Code: "ratelimited"}, false},
		{channel.PlatformError{Status: 200, Code: "fatal_error"}, false},
		{channel.PlatformError{Status: 200, Code: "service_unavailable"}, false},
		{channel.PlatformError{Status: 200, Code: "request_timeout"}, false},
		{channel.PlatformError{Status: 200}, false},
	} {
		if got := c.err.Permanent(); got != c.want {
			t.Errorf("%v: Permanent() = %v", &c.err, got)
		}
	}
}
