package spool_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// runningTurn starts a slow turn on sess, consumed on its own goroutine,
// and returns once it runs; the channel gets its result.
func runningTurn(t *testing.T, sess *spool.Session, prompt string) <-chan *spool.Result {
	t.Helper()
	out := make(chan *spool.Result, 1)
	started := make(chan struct{})
	go func() {
		var res *spool.Result
		first := true
		for ev, err := range sess.Stream(context.Background(), prompt) {
			if err != nil {
				break
			}
			if ev.Kind == spool.EventText && first {
				close(started)
				first = false
			}
			if ev.Kind == spool.EventTurnEnd {
				res = ev.Result
			}
		}
		out <- res
	}()
	<-started
	return out
}

// Stop ends the running turn, whoever consumes it, recorded cancelled,
// and returns once that is recorded; with none running it is
// ErrNotRunning.
func TestStop(t *testing.T) {
	a := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(10 * time.Millisecond))})
	ctx := context.Background()
	sess := session(t, a, ctx, "s")
	if _, err := sess.Stop(ctx); !errors.Is(err, spool.ErrNotRunning) {
		t.Fatalf("stop with nothing running: %v", err)
	}
	done := runningTurn(t, sess, strings.Repeat("word ", 500))
	turnID, err := sess.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != transcript.StatusCancelled || res.TurnID != turnID {
		t.Fatalf("stopped turn %s ended %+v", turnID, res)
	}
	entries, _ := sess.Transcript(ctx)
	checkWellFormed(t, entries)
	if last := entries[len(entries)-1]; last.Type != transcript.TypeTurnEnd || last.Status != transcript.StatusCancelled {
		t.Fatalf("last entry %s %s", last.Type, last.Status)
	}
	if _, ok := sess.Running(); ok {
		t.Fatal("a turn still runs after Stop")
	}
}

// Watchers follow a running turn from its beginning or from any event,
// each at its own pace: the text each gets is the stored answer exactly.
// With Follow, the next turns come too.
func TestWatch(t *testing.T) {
	a := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(2 * time.Millisecond))})
	ctx := context.Background()
	sess := session(t, a, ctx, "w")
	// With nothing running, a watch without Follow ends at once.
	for _, err := range sess.Watch(ctx, spool.WatchOptions{}) {
		t.Fatalf("a watch of an idle session yielded (%v)", err)
	}
	prompt := strings.Repeat("word ", 40)
	done := runningTurn(t, sess, prompt)
	first := watchAll(t, sess.Watch(ctx, spool.WatchOptions{}))
	res := <-done
	if first[0].Kind != spool.EventTurnStart || first[len(first)-1].Kind != spool.EventTurnEnd {
		t.Fatalf("the watch ran %s … %s", first[0].Kind, first[len(first)-1].Kind)
	}
	if got := texts(first); got != res.Text {
		t.Fatalf("watched %q, answered %q", got, res.Text)
	}
	// Reconnecting after any event gives exactly the rest, also after
	// the turn ended (its events stay for RecentTurn).
	for k := range first {
		after, err := spool.ParseEventID(first[k].ID)
		if err != nil {
			t.Fatal(err)
		}
		var rest []spool.Event
		for ev, err := range sess.Watch(ctx, spool.WatchOptions{After: after}) {
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, ev)
		}
		if got := texts(first[:k+1]) + texts(rest); got != res.Text || len(rest) != len(first)-k-1 {
			t.Fatalf("after event %d: %d events, text %q", k, len(rest), got)
		}
	}
	// Follow: a watcher that stays sees the next turns as they run.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan string, 1)
	go func() {
		var evs []spool.Event
		for ev, err := range sess.Watch(wctx, spool.WatchOptions{Follow: true}) {
			if err != nil {
				got <- err.Error()
				return
			}
			evs = append(evs, ev)
			if ev.Kind == spool.EventTurnEnd {
				got <- texts(evs)
				return
			}
		}
		got <- "the watch ended"
	}()
	for sess.Watchers() < 1 {
		select {
		case g := <-got:
			t.Fatal(g)
		default:
			time.Sleep(time.Millisecond)
		}
	}
	next, err := sess.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != next.Text {
		t.Fatalf("following, saw %q; the turn answered %q", g, next.Text)
	}
	// An id past the transcript is refused, as is nonsense.
	for _, bad := range []string{"3.x", "-0.5", "0.-0", "+1.2", "1", "1.2.3", " 1.2"} {
		if _, err := spool.ParseEventID(bad); !errors.Is(err, spool.ErrBadEventID) {
			t.Fatalf("parse %q: %v", bad, err)
		}
	}
	for _, err := range sess.Watch(ctx, spool.WatchOptions{After: spool.EventID{Pos: 999, N: 1}}) {
		if !errors.Is(err, spool.ErrBadEventID) {
			t.Fatalf("an id past the transcript: %v", err)
		}
	}
}

// A watcher behind by more than one run (it resumes after the next turns
// ran, or reads slower than turns end) gets the rest of its own run and
// then every run after it, in order, each whole: the hub keeps a
// session's recent runs, not only its newest.
func TestWatchResumesRunsBehind(t *testing.T) {
	a := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(time.Millisecond))})
	ctx := context.Background()
	sess := session(t, a, ctx, "behind")
	done := runningTurn(t, sess, strings.Repeat("one ", 20))
	first := watchAll(t, sess.Watch(ctx, spool.WatchOptions{}))
	res1 := <-done

	// A slow follower: it takes one event, then waits while two more
	// turns run and end.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slow := make(chan []spool.Event, 1)
	hold := make(chan struct{})
	go func() {
		var evs []spool.Event
		ends := 0
		for ev, err := range sess.Watch(wctx, spool.WatchOptions{After: mustID(t, first[0].ID), Follow: true}) {
			if err != nil {
				break
			}
			evs = append(evs, ev)
			if len(evs) == 1 {
				<-hold
			}
			if ev.Kind == spool.EventTurnEnd {
				if ends++; ends == 3 {
					slow <- evs
					return
				}
			}
		}
		slow <- nil
	}()
	for sess.Watchers() < 1 {
		time.Sleep(time.Millisecond)
	}
	res2, err := sess.Send(ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	res3, err := sess.Send(ctx, "three")
	if err != nil {
		t.Fatal(err)
	}
	want := res1.Text + res2.Text + res3.Text
	close(hold)
	var evs []spool.Event
	select {
	case evs = <-slow:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow follower did not see three runs end")
	}
	if got := texts(first[:1]) + texts(evs); got != want {
		t.Fatalf("the slow follower saw %q, want %q", got, want)
	}
	checkIDsRise(t, append(first[:1:1], evs...))

	// Resuming after each event of the first run, with both later runs
	// over, gives the rest of it and both later runs whole.
	for k := range first {
		var rest []spool.Event
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		for ev, err := range sess.Watch(wctx, spool.WatchOptions{After: mustID(t, first[k].ID), Follow: true}) {
			if err != nil {
				t.Fatal(err)
			}
			if wctx.Err() != nil {
				break
			}
			rest = append(rest, ev)
			if ev.Result != nil && ev.Result.TurnID == res3.TurnID {
				break
			}
		}
		cancel()
		if got := texts(first[:k+1]) + texts(rest); got != want {
			t.Fatalf("after event %d of the first run: %q, want %q", k, got, want)
		}
		checkIDsRise(t, append(first[k:k+1:k+1], rest...))
	}
}

func mustID(t *testing.T, s string) spool.EventID {
	t.Helper()
	id, err := spool.ParseEventID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// checkIDsRise fails unless the events' ids rise strictly.
func checkIDsRise(t *testing.T, evs []spool.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if !mustID(t, evs[i-1].ID).Before(mustID(t, evs[i].ID)) {
			t.Fatalf("event %d (%s) does not come after event %d (%s)", i, evs[i].ID, i-1, evs[i-1].ID)
		}
	}
}

// A session's watchers are bounded.
func TestWatchBound(t *testing.T) {
	a := newAgent(t, spool.Config{MaxSessionWatchers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sess := session(t, a, ctx, "b")
	go func() {
		for range sess.Watch(ctx, spool.WatchOptions{Follow: true}) {
		}
	}()
	waitWatchers(t, a, sess, 1)
	for _, err := range sess.Watch(ctx, spool.WatchOptions{}) {
		if !errors.Is(err, spool.ErrTooManyWatchers) {
			t.Fatalf("a second watcher: %v", err)
		}
	}
}

func waitWatchers(t *testing.T, a *spool.Agent, sess *spool.Session, n int) {
	t.Helper()
	for sess.Watchers() < n {
		time.Sleep(time.Millisecond)
	}
}

func texts(evs []spool.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == spool.EventText {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// Without notifications (two file stores on one directory, behind a
// wrapper that hides their Notifier: a store without one), a watcher
// follows a turn that another process runs through its transcript, step
// by step, polled every PollInterval: it sees the turn begin, its answer
// once stored, and its end; with Follow, the next turns too. Its ids
// increase.
func TestWatchByPolling(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() store.Store {
		st, err := filestore.New(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return struct{ store.Store }{st} // no Notifier
	}
	runs := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(20 * time.Millisecond)), Store: open()})
	watches := newAgent(t, spool.Config{Store: open()})
	sess, other := session(t, runs, ctx, "p"), session(t, watches, ctx, "p")
	done := runningTurn(t, sess, strings.Repeat("word ", 15))
	evs := watchAll(t, other.Watch(ctx, spool.WatchOptions{}))
	res := <-done
	if len(evs) < 2 || evs[0].Kind != spool.EventTurnStart || evs[len(evs)-1].Kind != spool.EventTurnEnd {
		t.Fatalf("polled %v", evs)
	}
	if got := texts(evs); got != res.Text || evs[len(evs)-1].Result.Text != res.Text || evs[len(evs)-1].Result.Status != transcript.StatusOK {
		t.Fatalf("polled %q (end %+v); the turn answered %q", got, evs[len(evs)-1].Result, res.Text)
	}
	checkIncreasing(t, evs)
	// Follow: the next turns of the other process, as they are stored.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan []spool.Event, 1)
	ready := make(chan struct{})
	go func() {
		var evs []spool.Event
		for ev, err := range other.Watch(wctx, spool.WatchOptions{Follow: true, Ready: func() { close(ready) }}) {
			if err != nil {
				t.Error(err)
				break
			}
			if evs = append(evs, ev); ev.Kind == spool.EventTurnEnd {
				break
			}
		}
		got <- evs
	}()
	<-ready
	next, err := sess.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	followed := <-got
	if texts(followed) != next.Text {
		t.Fatalf("following by polling: %q; answered %q", texts(followed), next.Text)
	}
	checkIncreasing(t, append(evs, followed...))
}

func checkIncreasing(t *testing.T, evs []spool.Event) {
	t.Helper()
	var last spool.EventID
	for _, ev := range evs {
		id, err := spool.ParseEventID(ev.ID)
		if err != nil || !last.Before(id) {
			t.Fatalf("event %s has id %q after %s", ev.Kind, ev.ID, last)
		}
		last = id
	}
}

// quietStore is a store without notifications (its Notifier, and every
// other capability of the store inside, hidden).
type quietStore struct{ store.Store }

// callOnce calls delete_order on its first request, once gate is closed,
// and answers "done" after.
type callOnce struct {
	gate  chan struct{}
	calls atomic.Int32
}

func (m *callOnce) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if m.calls.Add(1) > 1 {
			yield(model.Event{Kind: model.EventText, Text: "done"}, nil)
			return
		}
		select {
		case <-m.gate:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		yield(model.Event{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{ID: "c1", Name: "delete_order", Arguments: []byte(`{"order":1042}`)}}, nil)
	}
}

// A watcher that follows a turn through the transcript (a store without
// notifications) sees it pause on an approval as the live run ends it:
// an EventTurnEnd with StatusAwaitingApproval and the approval waiting,
// and a watch without Follow returns there. Followed on, the decision
// begins the turn again and its end comes as stored.
func TestWatchByPollingPauses(t *testing.T) {
	ctx := context.Background()
	st := quietStore{memstore.New()}
	m := &callOnce{gate: make(chan struct{})}
	runs := newAgent(t, spool.Config{Store: st, Model: m, Tools: approvalTools(nil)})
	watches := newAgent(t, spool.Config{Store: st})
	sess, other := session(t, runs, ctx, "ap"), session(t, watches, ctx, "ap")
	started := make(chan struct{})
	paused := make(chan *spool.Result, 1)
	go func() {
		var res *spool.Result
		for ev, err := range sess.Stream(ctx, "delete order 1042") {
			if err != nil {
				t.Error(err)
				break
			}
			switch ev.Kind {
			case spool.EventTurnStart:
				close(started)
			case spool.EventTurnEnd:
				res = ev.Result
			}
		}
		paused <- res
	}()
	<-started
	var evs []spool.Event
	// Bounded only so that a watch that never ends fails rather than hangs.
	pctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	for ev, err := range other.Watch(pctx, spool.WatchOptions{Ready: func() { close(m.gate) }}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	live := <-paused
	if len(evs) == 0 {
		t.Fatal("the polled watch yielded nothing")
	}
	if live == nil || live.Status != spool.StatusAwaitingApproval || len(live.Pending) != 1 {
		t.Fatalf("the run ended %+v", live)
	}
	end := evs[len(evs)-1]
	if end.Kind != spool.EventTurnEnd || end.Result == nil {
		t.Fatalf("the polled watch ended with %v", evs)
	}
	got := end.Result
	if got.Status != live.Status || got.TurnID != live.TurnID || got.Text != live.Text || len(got.Pending) != 1 ||
		got.Pending[0].ID != live.Pending[0].ID || got.Pending[0].CallID != "c1" || got.Pending[0].Tool != "delete_order" {
		t.Fatalf("the polled pause %+v; the run's %+v", got, live)
	}
	var kinds []spool.EventKind
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	if want := []spool.EventKind{spool.EventTurnStart, spool.EventStepStart, spool.EventToolCall, spool.EventStepEnd, spool.EventApprovalRequest, spool.EventTurnEnd}; !slices.Equal(kinds, want) {
		t.Fatalf("polled %v, want %v", kinds, want)
	}
	checkIncreasing(t, evs)
	// Followed on from the pause: the decision resumes the turn.
	after, _ := spool.ParseEventID(end.ID)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	rest := make(chan []spool.Event, 1)
	go func() {
		var evs []spool.Event
		for ev, err := range other.Watch(wctx, spool.WatchOptions{After: after, Follow: true, Ready: func() { close(ready) }}) {
			if err != nil {
				t.Error(err)
				break
			}
			if evs = append(evs, ev); ev.Kind == spool.EventTurnEnd {
				break
			}
		}
		rest <- evs
	}()
	<-ready
	done, err := sess.Approve(ctx, live.Pending[0].ID, transcript.ApprovalScopeOnce)
	if err != nil {
		t.Fatal(err)
	}
	resumed := <-rest
	if len(resumed) < 2 || resumed[0].Kind != spool.EventTurnStart || resumed[len(resumed)-1].Kind != spool.EventTurnEnd {
		t.Fatalf("followed after the pause: %v", resumed)
	}
	if r := resumed[len(resumed)-1].Result; r.Status != transcript.StatusOK || r.Text != done.Text || r.TurnID != live.TurnID {
		t.Fatalf("the resumed turn ended %+v; the run's %+v", r, done)
	}
	checkIncreasing(t, append(evs, resumed...))
}

// Stop of a turn whose end the store cannot record says so: the turn
// stopped, but ErrEndNotRecorded, not success.
func TestStopEndNotRecorded(t *testing.T) {
	st := &failingStore{plainStore: plainStore{memstore.New()}}
	a := newAgent(t, spool.Config{Store: st, Model: echo.New(echo.WithDelay(10 * time.Millisecond))})
	ctx := context.Background()
	sess := session(t, a, ctx, "s")
	done := runningTurn(t, sess, strings.Repeat("word ", 500))
	st.fail.Store(true)
	if _, err := sess.Stop(ctx); !errors.Is(err, spool.ErrEndNotRecorded) {
		t.Fatalf("Stop of a turn whose end the store refused: %v, want ErrEndNotRecorded", err)
	}
	<-done
	if _, ok := sess.Running(); ok {
		t.Fatal("a turn still runs after Stop")
	}
	st.fail.Store(false)
	if _, err := sess.Send(ctx, "again"); err != nil {
		t.Fatalf("the next call, the store back: %v", err)
	}
	entries, err := sess.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, entries)
}

// watchAll returns every event a watch yields, failing the test on an
// error.
func watchAll(t *testing.T, seq iter.Seq2[spool.Event, error]) []spool.Event {
	t.Helper()
	var evs []spool.Event
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A watch that joins a running turn sees all of it, from its start, also
// when the turn ends before the watch reads its first event: Ready has
// told the watcher that it sees the run (a server has sent its answer's
// header), so the run is its to show whole.
func TestWatchHasTheRunItJoined(t *testing.T) {
	a := newAgent(t, spool.Config{Model: echo.New(echo.WithDelay(time.Millisecond))})
	ctx := context.Background()
	sess := session(t, a, ctx, "s")
	done := runningTurn(t, sess, "one two three")
	var res *spool.Result
	var kinds []spool.EventKind
	for ev, err := range sess.Watch(ctx, spool.WatchOptions{Ready: func() { res = <-done }}) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
	}
	if res == nil || res.Status != transcript.StatusOK {
		t.Fatalf("the turn ended %+v", res)
	}
	if len(kinds) < 2 || kinds[0] != spool.EventTurnStart || kinds[len(kinds)-1] != spool.EventTurnEnd {
		t.Fatalf("the watch had %v, not the turn from its start to its end", kinds)
	}
}
