package spool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// gatedModel streams "hello " and "wor", then waits for gate before "ld".
type gatedModel struct{ gate chan struct{} }

func (m gatedModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		for _, s := range []string{"hello ", "wor"} {
			if !yield(model.Event{Kind: model.EventText, Text: s}, nil) {
				return
			}
		}
		select {
		case <-m.gate:
		case <-ctx.Done():
			yield(model.Event{}, ctx.Err())
			return
		}
		yield(model.Event{Kind: model.EventText, Text: "ld"}, nil)
	}
}

// gatedPair is two agents, as two processes would be: one running turns
// with gatedModel{gate} on st, one watching through ws.
func gatedPair(t *testing.T, st, ws store.Store, gate chan struct{}) (runs, watches *Agent) {
	t.Helper()
	var err error
	if runs, err = New(Config{Store: st, Model: gatedModel{gate}}); err != nil {
		t.Fatal(err)
	}
	if watches, err = New(Config{Store: ws, Model: gatedModel{gate}}); err != nil {
		t.Fatal(err)
	}
	return runs, watches
}

// muteStore is a memory store whose syncs are lost once mute is set (the
// run's process seems gone to the watchers that use it), and that says
// when the transcript is first read after that.
type muteStore struct {
	*memstore.Store
	mute   atomic.Bool
	read   chan struct{}
	readMu sync.Once
}

func (s *muteStore) Notify(ctx context.Context, key store.Key, msg []byte) error {
	if s.mute.Load() && bytes.HasPrefix(msg, []byte(`{"t":"sync"`)) {
		return nil
	}
	return s.Store.Notify(ctx, key, msg)
}

func (s *muteStore) ReadRange(ctx context.Context, key store.Key, start, end int) ([]transcript.Entry, int, error) {
	if s.mute.Load() {
		s.readMu.Do(func() { close(s.read) })
	}
	return s.Store.ReadRange(ctx, key, start, end)
}

// relayWaits sets how long a relayed watch waits for the answer to its
// sync and, in a run, for a word from it before it probes, until the
// test ends.
func relayWaits(t *testing.T, sync, probe time.Duration) {
	oldSync, oldProbe := syncWait, probeAfter
	syncWait, probeAfter = sync, probe
	t.Cleanup(func() { syncWait, probeAfter = oldSync, oldProbe })
}

// A relayed watcher that takes the run's process for gone in the middle
// of a step (its probe is not answered) follows the run through the
// transcript, and yields of the stored step only what it did not have:
// the text it gets, live and then stored, is the answer exactly, once.
func TestProbeMidStep(t *testing.T) {
	relayWaits(t, 50*time.Millisecond, 20*time.Millisecond)
	ctx := context.Background()
	mem := memstore.New()
	gate := make(chan struct{})
	ws := &muteStore{Store: mem, read: make(chan struct{})}
	runs, watches := gatedPair(t, mem, ws, gate)
	sess, err := runs.Session(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	other, err := watches.Session(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	result := make(chan *Result, 1)
	go func() {
		var res *Result
		for ev, err := range sess.Stream(ctx, "hi") {
			if err != nil {
				t.Error(err)
				break
			}
			if ev.Kind == EventTurnStart {
				close(started)
			}
			if ev.Kind == EventTurnEnd {
				res = ev.Result
			}
		}
		result <- res
	}()
	<-started
	var evs []Event
	text := ""
	for ev, err := range other.Watch(ctx, WatchOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		if ev.Kind == EventText {
			text += ev.Text
			if text == "hello wor" {
				// The run now says nothing until the gate opens, and its
				// process answers no probe.
				ws.mute.Store(true)
				go func() {
					<-ws.read // the watcher follows the transcript
					close(gate)
				}()
			}
		}
	}
	res := <-result
	if res == nil || res.Text != "hello world" {
		t.Fatalf("the turn answered %+v", res)
	}
	select {
	case <-ws.read:
	default:
		t.Fatal("the watcher never went to the transcript")
	}
	if text != res.Text {
		t.Fatalf("the watcher got %q; the answer is %q (events %v)", text, res.Text, evs)
	}
	var kinds []EventKind
	var last EventID
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
		id, err := ParseEventID(ev.ID)
		if err != nil || !last.Before(id) {
			t.Fatalf("event %s has id %q after %s", ev.Kind, ev.ID, last)
		}
		last = id
	}
	want := []EventKind{EventTurnStart, EventStepStart, EventText, EventText, EventText, EventStepEnd, EventTurnEnd}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if end := evs[len(evs)-1]; end.Result == nil || end.Result.Status != transcript.StatusOK || end.Result.Text != res.Text {
		t.Fatalf("the watch ended with %+v", end.Result)
	}
}

// countingStore is a memory store that counts its listeners.
type countingStore struct {
	*memstore.Store
	listens atomic.Int32
}

func (s *countingStore) Listen(ctx context.Context, key store.Key) (<-chan []byte, error) {
	s.listens.Add(1)
	return s.Store.Listen(ctx, key)
}

func (s *countingStore) ListenFunc(key store.Key, fn func([]byte)) (func(), error) {
	s.listens.Add(1)
	return s.Store.ListenFunc(key, fn)
}

// The watchers of a session in a process that does not run its turn
// share one listener of the store (one decode of each message), and each
// gets the whole turn, once; the listener goes with the last of them.
func TestWatchersShareListener(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	gate := make(chan struct{})
	cs := &countingStore{Store: mem}
	runs, watches := gatedPair(t, mem, cs, gate)
	sess, _ := runs.Session(ctx, "w")
	other, _ := watches.Session(ctx, "w")
	const n = 5
	var ready sync.WaitGroup
	ready.Add(n)
	texts := make(chan string, n)
	for range n {
		go func() {
			text := ""
			for ev, err := range other.Watch(ctx, WatchOptions{Follow: true, Ready: ready.Done}) {
				if err != nil {
					t.Error(err)
					break
				}
				text += ev.Text
				if ev.Kind == EventTurnEnd {
					break
				}
			}
			texts <- text
		}()
	}
	ready.Wait()
	close(gate)
	res, err := sess.Send(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if got := <-texts; got != res.Text {
			t.Errorf("a watcher got %q; the answer is %q", got, res.Text)
		}
	}
	if l := cs.listens.Load(); l != 1 {
		t.Fatalf("%d watchers listened %d times, want once", n, l)
	}
	watches.live.subMu.Lock()
	left := len(watches.live.subs)
	watches.live.subMu.Unlock()
	if left != 0 {
		t.Fatalf("%d subscriptions left after the watchers", left)
	}
}

// TestForgetRecentTurns: a finished run is kept until it is due, then
// forgotten (its relay's subscription ended); a run that a newer one
// followed is retired at once (its relay ends) but kept for watchers
// until it is due as well.
func TestForgetRecentTurns(t *testing.T) {
	h := newLiveHub(0, 0)
	a, b := store.Key{ID: "a"}, store.Key{ID: "b"}
	ta, _ := h.begin(a, "ta", 0, func() {})
	off := 0
	ta.relayed(func() { off++ })
	h.finish(ta, false)
	tb, _ := h.begin(b, "tb", 0, func() {})
	h.finish(tb, false)
	tb2, old := h.begin(b, "tb2", 2, func() {}) // follows tb
	if old != tb {
		t.Fatalf("begin followed %v, want tb", old)
	}
	old.retire()
	select {
	case <-tb.retired:
	default:
		t.Fatal("a followed run is not retired")
	}
	h.mu.Lock()
	if len(h.recent) != 2 || h.recent[0].t != ta || h.recent[1].t != tb || tb2.prev != tb {
		t.Fatalf("recent = %+v, want ta and tb, tb before tb2", h.recent)
	}
	h.recent[0].due = time.Now().Add(-time.Second)
	h.recent[1].due = time.Now().Add(-time.Second)
	h.mu.Unlock()
	h.forgetDue()
	select {
	case <-ta.retired:
	default:
		t.Fatal("a due run is not retired")
	}
	if cur, _ := h.current(a); cur != nil || off != 1 {
		t.Fatalf("after forgetting: current %v, relay ended %d times", cur, off)
	}
	if cur, _ := h.current(b); cur != tb2 || tb2.prev != nil {
		t.Fatalf("the running run of b is %v (before it %v), want tb2 alone", cur, tb2.prev)
	}
	h.mu.Lock()
	n := len(h.recent)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d runs still queued, want none", n)
	}
	h.finish(tb2, false)
	h.mu.Lock()
	due := h.recent[len(h.recent)-1]
	h.mu.Unlock()
	if due.t != tb2 || time.Until(due.due) <= 0 {
		t.Fatalf("tb2 queued as %+v", due)
	}
}

// TestKeptRunsBound: a session running turns back to back keeps keptRuns
// of them, not every run of the last RecentTurn; the ones over the bound
// leave the queue at once.
func TestKeptRunsBound(t *testing.T) {
	h := newLiveHub(0, 0)
	k := store.Key{ID: "s"}
	var runs []*liveTurn
	for i := range 3 * keptRuns {
		r, old := h.begin(k, fmt.Sprint(i), int64(2*i), func() {})
		if old != nil {
			old.retire()
		}
		h.finish(r, false)
		runs = append(runs, r)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	chain := 0
	for x := h.turns[k]; x != nil; x = x.prev {
		if x != runs[len(runs)-1-chain] {
			t.Fatalf("run %d of the chain is not the session's run %d", chain, len(runs)-1-chain)
		}
		chain++
	}
	queued := 0
	for _, r := range h.recent {
		if r.t != nil {
			queued++
		}
	}
	if chain != keptRuns || queued != keptRuns {
		t.Fatalf("kept %d runs on the chain and %d in the queue, want %d", chain, queued, keptRuns)
	}
	if runs[0].kept || !runs[len(runs)-keptRuns].kept {
		t.Fatal("the oldest runs are kept, or a recent one is not")
	}
}

// A run's notifications are made only when they may reach someone: a
// listener of another agent, or a watcher on this one's subscription;
// never for the run's own subscription alone, nor when the store cannot
// count its listeners.
func TestHeard(t *testing.T) {
	mem := memstore.New()
	a, err := New(Config{Model: echo.New(), Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key{Agent: "default", ID: "h"}
	tr, _ := a.live.begin(key, "t1", 0, func() {})
	defer tr.retire()
	if a.heard(tr, true) {
		t.Fatal("heard with no listener")
	}
	if !a.listenRelay(tr) {
		t.Fatal("the relay did not listen")
	}
	if a.heard(tr, true) {
		t.Fatal("heard by the run's own subscription alone")
	}
	_, off, err := a.live.subscribe(mem, key, true)
	if err != nil {
		t.Fatal(err)
	}
	if !a.heard(tr, false) {
		t.Fatal("not heard by a watcher of this agent")
	}
	off()
	if a.heard(tr, false) {
		t.Fatal("heard once the watcher left")
	}
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := mem.Listen(ctx, key); err != nil {
		t.Fatal(err)
	}
	if !a.heard(tr, false) {
		t.Fatal("not heard by another listener")
	}
	cancel()

	// A store that cannot count its listeners: a run's first events are
	// heard, the rest once someone asked for the run.
	b, err := New(Config{Model: echo.New(), Store: &basicNotifier{mem: mem}})
	if err != nil {
		t.Fatal(err)
	}
	bt, _ := b.live.begin(store.Key{Agent: "default", ID: "b"}, "t1", 0, func() {})
	defer bt.retire()
	if !b.heard(bt, true) {
		t.Fatal("a run's first events not heard on a store that cannot count its listeners")
	}
	if b.heard(bt, false) {
		t.Fatal("a run's later events heard on a store that cannot count its listeners, unasked")
	}
	b.onControl(bt, &relayMsg{T: "sync", Nonce: "n"})
	if !b.heard(bt, false) {
		t.Fatal("a run's later events not heard once a watcher asked for it")
	}
}

// basicNotifier is a Notifier that does not count its listeners; it
// counts the relay's notifications of run events and ends.
type basicNotifier struct {
	mem      *memstore.Store
	evs, end atomic.Int64
}

func (n *basicNotifier) Append(ctx context.Context, k store.Key, e transcript.Entry) error {
	return n.mem.Append(ctx, k, e)
}

func (n *basicNotifier) Read(ctx context.Context, k store.Key) ([]transcript.Entry, error) {
	return n.mem.Read(ctx, k)
}

func (n *basicNotifier) List(ctx context.Context, ns store.Namespace, o store.ListOptions) (store.SessionPage, error) {
	return n.mem.List(ctx, ns, o)
}

func (n *basicNotifier) Delete(ctx context.Context, k store.Key) error { return n.mem.Delete(ctx, k) }

func (n *basicNotifier) Notify(ctx context.Context, k store.Key, msg []byte) error {
	switch {
	case bytes.HasPrefix(msg, []byte(`{"t":"ev"`)):
		n.evs.Add(1)
	case bytes.HasPrefix(msg, []byte(`{"t":"end"`)):
		n.end.Add(1)
	}
	return n.mem.Notify(ctx, k, msg)
}

func (n *basicNotifier) Listen(ctx context.Context, k store.Key) (<-chan []byte, error) {
	return n.mem.Listen(ctx, k)
}

// slowModel answers with words, one event each, a millisecond apart, so
// that a run's events are relayed in several batches.
type slowModel struct{}

func (slowModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		for _, w := range []string{"one ", "two ", "three ", "four ", "five"} {
			time.Sleep(time.Millisecond)
			if !yield(model.Event{Kind: model.EventText, Text: w}, nil) {
				return
			}
		}
	}
}

// On a store that cannot count its listeners, a run nobody asked for
// notifies its first events only; a watcher that follows the session from
// another process hears each run begin, asks for it, and gets all of it.
func TestRelayAskedFor(t *testing.T) {
	// No probe: what the follower gets, it gets by asking for the run.
	relayWaits(t, syncWait, time.Hour)
	ctx := t.Context()
	mem := memstore.New()
	rs, ws := &basicNotifier{mem: mem}, &basicNotifier{mem: mem}
	runs, err := New(Config{Store: rs, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	watches, err := New(Config{Store: ws, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := runs.Session(ctx, "s")
	const turns = 3
	for range turns {
		if _, err := sess.Send(ctx, "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if evs, end := rs.evs.Load(), rs.end.Load(); evs != turns || end != 0 {
		t.Fatalf("%d turns nobody watched: %d notifications of events and %d of ends, want %d and 0", turns, evs, end, turns)
	}

	other, _ := watches.Session(ctx, "s")
	texts := followTexts(t, other)
	rs.evs.Store(0)
	for range turns {
		wantTexts(t, texts, sendEach(t, runs)...)
	}
	if evs := rs.evs.Load(); evs <= turns {
		t.Fatalf("%d turns followed from elsewhere: %d notifications of events, want more than one a turn", turns, evs)
	}
}

// followTexts follows sess (Watch with Follow) until the test ends, and
// sends the text of each turn it sees end; it returns once the watch is
// ready.
func followTexts(t *testing.T, sess *Session) <-chan string {
	ready := make(chan struct{})
	texts := make(chan string, 8)
	go func() {
		text := ""
		for ev, err := range sess.Watch(t.Context(), WatchOptions{Follow: true, Ready: func() { close(ready) }}) {
			if err != nil {
				t.Error(err)
				return
			}
			text += ev.Text
			if ev.Kind == EventTurnEnd {
				texts <- text
				text = ""
			}
		}
	}()
	<-ready
	return texts
}

// wantTexts checks that the follower of texts (followTexts) saw turns
// end with the answers want, in order.
func wantTexts(t *testing.T, texts <-chan string, want ...string) {
	t.Helper()
	for i, w := range want {
		select {
		case got := <-texts:
			if got != w {
				t.Fatalf("turn %d: the follower got %q; the answer is %q", i, got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("turn %d: the follower got no end", i)
		}
	}
}

// sendEach sends one turn on session "s" of each agent in turn and
// returns their answers.
func sendEach(t *testing.T, agents ...*Agent) []string {
	t.Helper()
	var answers []string
	for _, a := range agents {
		sess, _ := a.Session(t.Context(), "s")
		res, err := sess.Send(t.Context(), "hi")
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, res.Text)
	}
	return answers
}

// slowSyncs is a basicNotifier whose syncs arrive late.
type slowSyncs struct{ *basicNotifier }

func (n slowSyncs) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if bytes.HasPrefix(msg, []byte(`{"t":"sync"`)) {
		time.Sleep(100 * time.Millisecond)
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

// A follower whose ask for a run arrives after the run ended and the next
// one replaced it (the relay forgot the run, and never notified the rest
// of it) gets the rest from the transcript: every turn whole, in order.
func TestRelayAskedTooLate(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	ctx := t.Context()
	mem := memstore.New()
	runs, err := New(Config{Store: &basicNotifier{mem: mem}, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	watches, err := New(Config{Store: slowSyncs{&basicNotifier{mem: mem}}, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := watches.Session(ctx, "s")
	texts := followTexts(t, other)
	time.Sleep(300 * time.Millisecond) // the watch's first sync went unanswered
	wantTexts(t, texts, sendEach(t, runs, runs, runs)...)
}

// lateEnd is a basicNotifier whose first notification of a run's end
// arrives late: the run's last batch crosses the next run's first, as two
// NOTIFYs on two replicas' connections may.
type lateEnd struct {
	*basicNotifier
	done atomic.Bool
}

func (n *lateEnd) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if bytes.HasPrefix(msg, []byte(`{"t":"ev"`)) && bytes.Contains(msg, []byte(`turn_end`)) && n.done.CompareAndSwap(false, true) {
		time.Sleep(300 * time.Millisecond)
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

// A follower that hears the next run begin before the end of the run it
// is in has every turn whole, in order, wherever the next run runs: in
// the first run's process, in the follower's own, or in a third (the end
// comes from the transcript).
func TestRelayCrossedEnd(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	agent := func(st store.Store) *Agent {
		a, err := New(Config{Store: st, Model: slowModel{}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := map[string]func(mem *memstore.Store) (first, next, watcher *Agent){
		"one process": func(mem *memstore.Store) (*Agent, *Agent, *Agent) {
			a := agent(&lateEnd{basicNotifier: &basicNotifier{mem: mem}})
			return a, a, a
		},
		"next run where the follower is": func(mem *memstore.Store) (*Agent, *Agent, *Agent) {
			c := agent(&basicNotifier{mem: mem})
			return agent(&lateEnd{basicNotifier: &basicNotifier{mem: mem}}), c, c
		},
		"next run in a third process": func(mem *memstore.Store) (*Agent, *Agent, *Agent) {
			return agent(&lateEnd{basicNotifier: &basicNotifier{mem: mem}}), agent(&basicNotifier{mem: mem}), agent(&basicNotifier{mem: mem})
		},
	}
	for name, agents := range cases {
		t.Run(name, func(t *testing.T) {
			first, next, watcher := agents(memstore.New())
			other, _ := watcher.Session(t.Context(), "s")
			texts := followTexts(t, other)
			time.Sleep(syncWait + 200*time.Millisecond) // the first sync went unanswered: no run
			wantTexts(t, texts, sendEach(t, first, next)...)
		})
	}
}

// lostRun is a basicNotifier that loses the notifications of a run's
// events (ev, snap, end) that lose says, given the run's place among
// those it relayed (from 0).
type lostRun struct {
	*basicNotifier
	lose func(run int, msg []byte) bool
	mu   sync.Mutex
	runs []int64 // the runs whose events it was given, in order
}

// losingPair returns two agents of numberedModel on mem, as two
// processes: runs, whose relay's notifications lose drops, and watches.
func losingPair(t *testing.T, mem *memstore.Store, lose func(run int, msg []byte) bool) (runs, watches *Agent) {
	t.Helper()
	runs, err := New(Config{Store: &lostRun{basicNotifier: &basicNotifier{mem: mem}, lose: lose}, Model: numberedModel{}})
	if err != nil {
		t.Fatal(err)
	}
	watches, err = New(Config{Store: &basicNotifier{mem: mem}, Model: numberedModel{}})
	if err != nil {
		t.Fatal(err)
	}
	return runs, watches
}

func (n *lostRun) Notify(ctx context.Context, k store.Key, msg []byte) error {
	var m relayMsg
	if err := json.Unmarshal(msg, &m); err == nil && (m.T == "ev" || m.T == "snap" || m.T == "end") {
		n.mu.Lock()
		if !slices.Contains(n.runs, m.Pos) {
			n.runs = append(n.runs, m.Pos)
		}
		run := slices.Index(n.runs, m.Pos)
		n.mu.Unlock()
		if n.lose(run, msg) {
			return nil
		}
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

// A follower in another process that hears a run begin while it is still
// in a run that ended two runs ago (the first run's end and the whole
// second run were lost) gets the rest of its run and the whole run
// between from the transcript, then the new run; one that had the first
// run whole and lost only the second gets that from the transcript too:
// every turn, in order.
func TestRelayFollowerBehindRuns(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	for name, lose := range map[string]func(run int, msg []byte) bool{
		"in a run":     func(run int, msg []byte) bool { return run == 1 || run == 0 && bytes.Contains(msg, []byte(`turn_end`)) },
		"between runs": func(run int, _ []byte) bool { return run == 1 },
	} {
		t.Run(name, func(t *testing.T) {
			mem := memstore.New()
			runs, watches := losingPair(t, mem, lose)
			other, _ := watches.Session(t.Context(), "s")
			texts := followTexts(t, other)
			time.Sleep(syncWait + 200*time.Millisecond) // the first sync went unanswered: no run
			wantTexts(t, texts, sendEach(t, runs, runs, runs)...)
		})
	}
}

// A follower in another process that has had no run yet gets a run whose
// every notification was lost from the transcript when the next run
// begins: one that began on an idle session (it starts at the
// transcript's end), and one that began with a snap of a run already
// over (it had that run whole).
func TestRelayFollowerLostFirstRun(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	for name, before := range map[string]int{"idle": 0, "after a run": 1} {
		t.Run(name, func(t *testing.T) {
			mem := memstore.New()
			var lost atomic.Int64
			lost.Store(-1)
			lose := func(_ int, msg []byte) bool {
				var m relayMsg
				return json.Unmarshal(msg, &m) == nil && m.Pos == lost.Load()
			}
			runs, watches := losingPair(t, mem, lose)
			for range before {
				sendEach(t, runs)
			}
			other, _ := watches.Session(t.Context(), "s")
			texts := followTexts(t, other)
			time.Sleep(syncWait + 200*time.Millisecond) // synced: on no run, or on a snap of the run over
			entries, err := mem.Read(t.Context(), store.Key{Agent: "default", ID: "s"})
			if err != nil {
				t.Fatal(err)
			}
			lost.Store(int64(len(entries)))
			wantTexts(t, texts, sendEach(t, runs, runs)...)
		})
	}
}

// A follower in another process that lost every notification of a run
// that resumed the turn it had last (an approval's decision) gets that
// run from the transcript when it hears of the next run: the decision of
// an approval the turn paused on begins a run, where a decision of the
// same turn used to be taken for one of the run the follower had. That
// holds whether it had the pause live or from the transcript (its first
// sync found the turn open in the transcript and its process silent: a
// loaded machine, notifications lost), and whether it hears of the next
// run by its first events or by the snap that answers its ask for the
// pause's run (a copy of the ask came late, and the next run answered
// it). The last two used to show the next run and never the decision's.
func TestRelayFollowerLostResumedRun(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	save := tool.New("save", "Save a note.", func(ctx context.Context, a struct{ Text string }) (string, error) {
		return "saved " + a.Text, nil
	}, tool.RequireApproval())
	for name, c := range map[string]struct{ pauseStored, askLate bool }{
		"pause live":                {},
		"pause from the transcript": {pauseStored: true},
		"next run by a snap":        {askLate: true},
	} {
		t.Run(name, func(t *testing.T) {
			mem := memstore.New()
			// The runs to lose are known by their position (the
			// transcript's length where each began): a relay notifies
			// after its run, so the next run's first notification may
			// come before the last of this one's.
			var lost, hushed atomic.Int64
			lost.Store(-1)
			hushed.Store(math.MaxInt64)
			var m model.Model = echo.New()
			if c.pauseStored {
				lost.Store(0) // the first run, the pause
				m = &lateFirst{Model: m, wait: syncWait + 500*time.Millisecond}
			}
			lose := func(_ int, msg []byte) bool {
				var m relayMsg
				if json.Unmarshal(msg, &m) != nil {
					return false
				}
				return m.Pos == lost.Load() || m.T == "ev" && m.Pos > hushed.Load()
			}
			runs, err := New(Config{Store: &lostRun{basicNotifier: &basicNotifier{mem: mem}, lose: lose}, Model: m, Tools: []*tool.Tool{save}})
			if err != nil {
				t.Fatal(err)
			}
			asks := &lateAsks{basicNotifier: &basicNotifier{mem: mem}, gate: make(chan struct{})}
			if !c.askLate {
				close(asks.gate)
			}
			watches, err := New(Config{Store: asks, Model: echo.New()})
			if err != nil {
				t.Fatal(err)
			}
			other, _ := watches.Session(t.Context(), "s")
			texts := followTexts(t, other)
			if !c.pauseStored {
				time.Sleep(syncWait + 200*time.Millisecond) // the first sync went unanswered: no run
			}
			// Else the first sync goes unanswered while the pause's run
			// waits on its model with its prompt in the transcript.
			rs, _ := runs.Session(t.Context(), "s")
			paused, err := rs.Send(t.Context(), `/call save {"Text":"milk"}`)
			if err != nil || paused.Status != StatusAwaitingApproval {
				t.Fatalf("Send = %+v, %v; want a pause", paused, err)
			}
			wantTexts(t, texts, paused.Text)
			entries, err := rs.Transcript(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			lost.Store(int64(len(entries)))
			if c.askLate {
				hushed.Store(int64(len(entries))) // the next run is heard of by its snap alone
			}
			resumed, err := rs.Approve(t.Context(), paused.Pending[0].ID, transcript.ApprovalScopeOnce)
			if err != nil || resumed.Status != transcript.StatusOK {
				t.Fatalf("Approve = %+v, %v", resumed, err)
			}
			next, err := rs.Send(t.Context(), "hi")
			if err != nil {
				t.Fatal(err)
			}
			if c.askLate {
				close(asks.gate)
			}
			wantTexts(t, texts, resumed.Text, next.Text)
		})
	}
}

// lateAsks is a basicNotifier whose syncs after the first arrive twice:
// at once, and again once gate is closed (a late copy, as a listener's
// connection that came back may deliver).
type lateAsks struct {
	*basicNotifier
	gate  chan struct{}
	syncs atomic.Int32
}

func (n *lateAsks) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if bytes.HasPrefix(msg, []byte(`{"t":"sync"`)) && n.syncs.Add(1) > 1 {
		go func() {
			<-n.gate
			_ = n.basicNotifier.Notify(context.WithoutCancel(ctx), k, msg)
		}()
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

// lateFirst is a model whose first stream begins after wait.
type lateFirst struct {
	model.Model
	wait time.Duration
	once sync.Once
}

func (m *lateFirst) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	m.once.Do(func() { time.Sleep(m.wait) })
	return m.Model.Stream(ctx, req)
}

// numberedModel answers with the number of messages it was sent, so
// that each turn's answer differs from the one before.
type numberedModel struct{}

func (numberedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		for _, w := range []string{"answer ", "to ", fmt.Sprint(len(req.Messages))} {
			time.Sleep(time.Millisecond)
			if !yield(model.Event{Kind: model.EventText, Text: w}, nil) {
				return
			}
		}
	}
}

// A watcher in another process that resumes in a run after the next one
// began (a client reconnecting to another replica) gets the rest of its
// run and then the next one whole, from the process that ran both: its
// hub keeps a session's recent runs, and the newest run's relay answers
// for them. Without Follow it gets the rest of its run alone.
func TestRelayResumeBehind(t *testing.T) {
	relayWaits(t, 200*time.Millisecond, time.Hour) // no probe
	ctx := t.Context()
	mem := memstore.New()
	runs, err := New(Config{Store: &basicNotifier{mem: mem}, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	watches, err := New(Config{Store: &basicNotifier{mem: mem}, Model: slowModel{}})
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := runs.Session(ctx, "s")
	a := streamAll(t, rs, "hi")
	resB, err := rs.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	text := func(evs []Event) (s string) {
		for _, ev := range evs {
			s += ev.Text
		}
		return s
	}
	other, _ := watches.Session(ctx, "s")
	for k := range a[:len(a)-1] {
		for _, follow := range []bool{true, false} {
			after, _ := ParseEventID(a[k].ID)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var got []Event
			for ev, err := range other.Watch(wctx, WatchOptions{After: after, Follow: follow}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
				if ev.Result != nil && ev.Result.TurnID == resB.TurnID {
					break
				}
			}
			cancel()
			want := text(a)
			if follow {
				want += resB.Text
			}
			if s := text(a[:k+1]) + text(got); s != want {
				t.Fatalf("after %s (follow %v): %q, want %q", a[k].ID, follow, s, want)
			}
		}
	}
}

// slowSnaps is a basicNotifier whose snaps arrive late.
type slowSnaps struct{ *basicNotifier }

func (n slowSnaps) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if bytes.HasPrefix(msg, []byte(`{"t":"snap"`)) {
		time.Sleep(300 * time.Millisecond)
	}
	return n.basicNotifier.Notify(ctx, k, msg)
}

// lockingNotifier is a basicNotifier with the memory store's turn lock,
// shared by every agent on mem as a Postgres advisory lock is by
// replicas; it counts the times its agent took it.
type lockingNotifier struct {
	basicNotifier
	locks atomic.Int64
}

func (n *lockingNotifier) Lock(ctx context.Context, k store.Key) (func(), error) {
	n.locks.Add(1)
	return n.mem.Lock(ctx, k)
}

// A follower that reads a crossed run's end from the transcript does not
// take the session's turn lock to close the turn open there: that is the
// next run, alive (closing a dead turn is for a run whose process does
// not answer).
func TestRelayCrossedEndTakesNoLock(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	mem := memstore.New()
	// The first run's end arrives late; the next run holds the turn lock.
	a, _ := New(Config{Store: &lateEnd{basicNotifier: &basicNotifier{mem: mem}}, Model: slowModel{}})
	b, _ := New(Config{Store: &lockingNotifier{basicNotifier: basicNotifier{mem: mem}}, Model: slowModel{}})
	ws := &lockingNotifier{basicNotifier: basicNotifier{mem: mem}}
	c, _ := New(Config{Store: ws, Model: slowModel{}})
	other, _ := c.Session(t.Context(), "s")
	texts := followTexts(t, other)
	time.Sleep(syncWait + 200*time.Millisecond)
	wantTexts(t, texts, sendEach(t, a, b)...)
	time.Sleep(100 * time.Millisecond) // a closeDead started by the watch would have locked by now
	if n := ws.locks.Load(); n > 0 {
		t.Fatalf("the follower's process took the session's turn lock %d times", n)
	}
}

// What the hub keeps of a finished run for RecentTurn is its events and
// its relay's one subscription, each no larger than it is: a server
// starting thousands of sessions a second keeps every one of them for a
// minute.
func TestFinishedRunKeepsLittle(t *testing.T) {
	a, err := New(Config{Model: echo.New(), Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := a.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "one two three four five six seven"); err != nil {
		t.Fatal(err)
	}
	run, _ := a.live.current(s.key)
	if run == nil {
		t.Fatal("the hub kept no run")
	}
	run.mu.Lock()
	n, c := len(run.events), cap(run.events)
	run.mu.Unlock()
	if n == 0 || c != n {
		t.Errorf("the finished run keeps %d events in room for %d", n, c)
	}
	a.live.subMu.Lock()
	sub := a.live.subs[s.key]
	a.live.subMu.Unlock()
	if sub == nil {
		t.Fatal("the finished run's relay does not listen")
	}
	sub.mu.Lock()
	outs := len(sub.outs)
	sub.mu.Unlock()
	if outs != 1 {
		t.Errorf("the session's subscription has %d subscribers, want the relay's one", outs)
	}
}

// A watcher that resumes in run A of one process, after run B ran in a
// second (and in some cases C in the first again: its chain then has A
// and C but not B), gets the rest of A and every later run, in order,
// whichever process answers first: a process still answers for its
// newest run, later runs wait for the rest of A, and a run between that
// the first answer lacks is looked for in the transcript.
func TestRelayResumeBehindAcrossProcesses(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	for _, c := range []struct {
		name                string
		slow1, slow2, third bool
	}{
		{"A's answer first", false, false, false},
		{"B's answer first", true, false, false},
		{"A and C, then B", false, true, true},
		{"three runs", false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			mem := memstore.New()
			agent := func(slow bool) *Agent {
				var st store.Store = &basicNotifier{mem: mem}
				if slow {
					st = slowSnaps{&basicNotifier{mem: mem}}
				}
				a, err := New(Config{Store: st, Model: numberedModel{}})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			p1, p2, p3 := agent(c.slow1), agent(c.slow2), agent(false)
			s1, _ := p1.Session(ctx, "s")
			a := streamAll(t, s1, "hi")
			want := ""
			for _, ev := range a[2:] {
				want += ev.Text
			}
			next := []*Agent{p2}
			if c.third {
				next = append(next, p1)
			}
			last := ""
			for i, p := range next {
				sess, _ := p.Session(ctx, "s")
				res, err := sess.Send(ctx, fmt.Sprint("again ", i))
				if err != nil {
					t.Fatal(err)
				}
				want, last = want+res.Text, res.TurnID
			}
			s3, _ := p3.Session(ctx, "s")
			after, _ := ParseEventID(a[1].ID)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			got := ""
			for ev, err := range s3.Watch(wctx, WatchOptions{After: after, Follow: true}) {
				if err != nil {
					t.Fatal(err)
				}
				got += ev.Text
				if ev.Result != nil && ev.Result.TurnID == last {
					break
				}
			}
			if got != want {
				t.Fatalf("resumed after %s: %q, want %q", a[1].ID, got, want)
			}
		})
	}
}

// A watcher without Follow that had run A whole (After is A's last event)
// resumes while B runs in another process, and A's process answers last:
// the watch does not end in the middle of B (A's answer, a run that
// ended, is not all there is once the watch is in B).
func TestRelayResumeWithoutFollow(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	ctx := t.Context()
	mem := memstore.New()
	gate := make(chan struct{})
	p1, _ := New(Config{Store: slowSnaps{&basicNotifier{mem: mem}}, Model: numberedModel{}})
	p2, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: gatedModel{gate}})
	p3, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: numberedModel{}})
	s1, _ := p1.Session(ctx, "s")
	a := streamAll(t, s1, "hi")
	s2, _ := p2.Session(ctx, "s")
	resB := make(chan *Result, 1)
	go func() {
		res, err := s2.Send(ctx, "again")
		if err != nil {
			t.Error(err)
		}
		resB <- res
	}()
	untilRunning(s2) // B runs, waiting on the gate after "hello wor"
	s3, _ := p3.Session(ctx, "s")
	after, _ := ParseEventID(a[len(a)-1].ID)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	time.AfterFunc(time.Second, func() { close(gate) })
	var got []Event
	for ev, err := range s3.Watch(wctx, WatchOptions{After: after}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	<-resB
	if len(got) > 0 && got[len(got)-1].Kind != EventTurnEnd {
		t.Fatalf("watch without Follow after %s (A's last) ended in the middle of B: %d events, the last %s %q", after, len(got), got[len(got)-1].Kind, got[len(got)-1].Text)
	}
}

// A watcher with Follow that had run A whole resumes while B runs in
// another process: it gets B from its beginning, once, whichever process
// answers first.
func TestRelayResumeAfterWholeRun(t *testing.T) {
	relayWaits(t, time.Second, time.Hour)
	for _, slowP1 := range []bool{false, true} {
		ctx := t.Context()
		mem := memstore.New()
		gate := make(chan struct{})
		var st1, st2 store.Store = &basicNotifier{mem: mem}, slowSnaps{&basicNotifier{mem: mem}}
		if slowP1 {
			st1, st2 = st2, st1
		}
		p1, _ := New(Config{Store: st1, Model: numberedModel{}})
		p2, _ := New(Config{Store: st2, Model: gatedModel{gate}})
		p3, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: numberedModel{}})
		s1, _ := p1.Session(ctx, "s")
		a := streamAll(t, s1, "hi")
		s2, _ := p2.Session(ctx, "s")
		resB := make(chan *Result, 1)
		go func() { res, _ := s2.Send(ctx, "again"); resB <- res }()
		untilRunning(s2)
		s3, _ := p3.Session(ctx, "s")
		after, _ := ParseEventID(a[len(a)-1].ID)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		time.AfterFunc(500*time.Millisecond, func() { close(gate) })
		var ids []string
		text := ""
		for ev, err := range s3.Watch(wctx, WatchOptions{After: after, Follow: true}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
			text += ev.Text
			if ev.Kind == EventTurnEnd {
				break
			}
		}
		cancel()
		res := <-resB
		if text != res.Text {
			t.Fatalf("slowP1 %v: %q want %q ids %v", slowP1, text, res.Text, ids)
		}
	}
}

// streamAll runs a turn of prompt on sess and returns its events.
func streamAll(t *testing.T, sess *Session, prompt string) []Event {
	t.Helper()
	var evs []Event
	for ev, err := range sess.Stream(t.Context(), prompt) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// untilRunning returns once a turn runs on sess in its process, and its
// first events went out.
func untilRunning(sess *Session) {
	for {
		if _, ok := sess.Running(); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// A follower that resumes after a stored event id (one it had from the
// transcript: the end of run A, or its pause) while C runs in another
// process gets B, a run between that no process answers for any more,
// before C. It used to go on with C alone.
func TestRelayResumeAfterStoredID(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	save := tool.New("save", "Save a note.", func(ctx context.Context, a struct{ Text string }) (string, error) {
		return "saved " + a.Text, nil
	}, tool.RequireApproval())
	for _, paused := range []bool{false, true} {
		t.Run(fmt.Sprint("paused ", paused), func(t *testing.T) {
			ctx := t.Context()
			mem := memstore.New()
			gate := make(chan struct{})
			// quiet runs A and B and answers no sync: it has no notifications.
			quiet, _ := New(Config{Store: struct{ store.Store }{mem}, Model: echo.New(), Tools: []*tool.Tool{save}})
			p2, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: gatedModel{gate}})
			p3, _ := New(Config{Store: &basicNotifier{mem: mem}, Model: echo.New()})
			sq, _ := quiet.Session(ctx, "s")
			prompt := "hi"
			if paused {
				prompt = `/call save {"Text":"milk"}`
			}
			a, err := sq.Send(ctx, prompt)
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := sq.Transcript(ctx)
			// A's end as the transcript has it: a turn end's only event,
			// or the pause after the approval request's.
			after := EventID{Pos: int64(len(entries) - 1), N: storedBase}
			var b *Result
			if paused {
				after.N++
				b, err = sq.Approve(ctx, a.Pending[0].ID, transcript.ApprovalScopeOnce)
			} else {
				b, err = sq.Send(ctx, "again")
			}
			if err != nil || b.Status != transcript.StatusOK {
				t.Fatalf("B = %+v, %v", b, err)
			}
			s2, _ := p2.Session(ctx, "s")
			resC := make(chan *Result, 1)
			go func() { res, _ := s2.Send(ctx, "more"); resC <- res }()
			untilRunning(s2)
			s3, _ := p3.Session(ctx, "s")
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			time.AfterFunc(500*time.Millisecond, func() { close(gate) })
			text, ends := "", 0
			for ev, err := range s3.Watch(wctx, WatchOptions{After: after, Follow: true}) {
				if err != nil {
					t.Fatal(err)
				}
				text += ev.Text
				if ev.Kind == EventTurnEnd {
					if ends++; ends == 2 {
						break
					}
				}
			}
			c := <-resC
			if want := b.Text + c.Text; text != want {
				t.Fatalf("resumed after %s: %q, want %q", after, text, want)
			}
		})
	}
}

// textOf is the text of events.
func textOf(events []Event) string {
	var b strings.Builder
	for _, ev := range events {
		b.WriteString(ev.Text)
	}
	return b.String()
}

// watchEnds watches s with opts (for up to 5 seconds) and returns once
// the watch is ready; the channel it returns gets each turn's end the
// watch yielded, as "turn id: its text", up to n of them, then "(no end):
// text" for text after the last end. onEnd, when not nil, is called with
// the number of ends after each.
func watchEnds(t *testing.T, ctx context.Context, s *Session, opts WatchOptions, n int, onEnd func(int)) <-chan []string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	t.Cleanup(cancel)
	ready := make(chan struct{})
	opts.Ready = func() { close(ready) }
	got := make(chan []string, 1)
	go func() {
		var ends []string
		text := ""
		for ev, err := range s.Watch(wctx, opts) {
			if err != nil {
				t.Error(err)
				break
			}
			text += ev.Text
			if ev.Kind == EventTurnEnd {
				ends = append(ends, ev.TurnID+": "+text)
				text = ""
				if onEnd != nil {
					onEnd(len(ends))
				}
				if len(ends) == n {
					break
				}
			}
		}
		if text != "" {
			ends = append(ends, "(no end): "+text)
		}
		got <- ends
	}()
	<-ready
	return got
}

// endGate is a memory store (it counts its listeners) whose first
// notification of a run's end waits until gate is closed: the run's last
// batch crosses the next run's, as two replicas' notifications may.
type endGate struct {
	*memstore.Store
	gate chan struct{}
	held atomic.Bool
}

func (n *endGate) Notify(ctx context.Context, k store.Key, msg []byte) error {
	if bytes.HasPrefix(msg, []byte(`{"t":"ev"`)) && bytes.Contains(msg, []byte(`turn_end`)) && n.held.CompareAndSwap(false, true) {
		<-n.gate
	}
	return n.Store.Notify(ctx, k, msg)
}

// A watcher that resumes in run A, which no process answers for any
// more, while run B ran in one process and C in another, hears all of C
// and B but for its end before its sync goes unanswered: it gets the rest
// of A from the transcript, then B whole (its end comes late), then C.
// It used to go on from B's part straight to C, and took B's end for
// one of a run it was past.
func TestRelayResumeCrossedEnd(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	ctx := t.Context()
	mem := memstore.New()
	// quiet runs A and answers no sync: it has no notifications.
	quiet, _ := New(Config{Store: struct{ store.Store }{mem}, Model: numberedModel{}})
	late := &endGate{Store: mem, gate: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(late.gate) }) }
	t.Cleanup(release)
	pb, _ := New(Config{Store: late, Model: numberedModel{}})
	pc, _ := New(Config{Store: mem, Model: numberedModel{}})
	pw, _ := New(Config{Store: mem, Model: numberedModel{}})
	sq, _ := quiet.Session(ctx, "s")
	a := streamAll(t, sq, "hi")
	textA := textOf(a)
	after, _ := ParseEventID(a[1].ID)
	sw, _ := pw.Session(ctx, "s")
	got := watchEnds(t, ctx, sw, WatchOptions{After: after, Follow: true}, 3, func(n int) {
		if n == 1 {
			// A's end, from the transcript once the sync went
			// unanswered: B's end is on its way.
			release()
		}
	})
	// B and C run, and are heard, well within syncWait.
	b := streamAll(t, func() *Session { s, _ := pb.Session(ctx, "s"); return s }(), "again")
	c := streamAll(t, func() *Session { s, _ := pc.Session(ctx, "s"); return s }(), "more")
	want := []string{a[0].TurnID + ": " + textA}
	for _, evs := range [][]Event{b, c} {
		want = append(want, evs[0].TurnID+": "+textOf(evs))
	}
	if g := <-got; !slices.Equal(g, want) {
		t.Fatalf("resumed after %s: turn ends %q, want %q", after, g, want)
	}
}

// A watcher that resumes in run A, which no process answers for any
// more, hears of run B, in another process, by a snap that lacks A: the
// answer to a join sync, on a store that cannot count its listeners (B
// began after the watch did), or to the watch's own sync, from B's
// process, which never ran A (B runs when the watch begins). It gets the
// rest of A from the transcript once syncWait passed, then B; without
// Follow, the rest of A alone. It used to go on to B without A's rest
// (the snap had synced the watch, so the transcript was not read).
func TestRelayResumeSnapWithoutRun(t *testing.T) {
	relayWaits(t, time.Second, time.Hour) // no probe
	for _, c := range []struct {
		name           string
		counts, follow bool
	}{
		{"join snap", false, true},
		{"B's snap", true, true},
		{"B's snap without follow", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			mem := memstore.New()
			st := func() store.Store {
				if c.counts {
					return mem
				}
				return &basicNotifier{mem: mem} // no listener count
			}
			// quiet runs A and answers no sync: it has no notifications.
			quiet, _ := New(Config{Store: struct{ store.Store }{mem}, Model: numberedModel{}})
			gate := make(chan struct{})
			var once sync.Once
			release := func() { once.Do(func() { close(gate) }) }
			t.Cleanup(release)
			pb, _ := New(Config{Store: st(), Model: gatedModel{gate}})
			pw, _ := New(Config{Store: st(), Model: numberedModel{}})
			sq, _ := quiet.Session(ctx, "s")
			a := streamAll(t, sq, "hi")
			textA := textOf(a)
			after, _ := ParseEventID(a[1].ID)
			sb, _ := pb.Session(ctx, "s")
			resB := make(chan *Result, 1)
			runB := func() {
				go func() {
					res, err := sb.Send(ctx, "again")
					if err != nil {
						t.Error(err)
					}
					resB <- res
				}()
			}
			if c.counts {
				runB()
				untilRunning(sb) // B runs, waiting on the gate after "hello wor"
			}
			sw, _ := pw.Session(ctx, "s")
			got := watchEnds(t, ctx, sw, WatchOptions{After: after, Follow: c.follow}, 2, nil)
			if !c.counts {
				runB() // heard by its first events, then by the join's snap
			}
			// B ends after the watch's resume deadline.
			time.AfterFunc(syncWait+500*time.Millisecond, release)
			b := <-resB
			want := []string{a[0].TurnID + ": " + textA}
			if c.follow {
				want = append(want, b.TurnID+": "+b.Text)
			}
			if g := <-got; !slices.Equal(g, want) {
				t.Fatalf("resumed after %s: turn ends %q, want %q", after, g, want)
			}
		})
	}
}

// A turn that pauses on two calls of a tool, resumed by approving one of
// them for the session (which decides the other too), runs on to its end
// without pausing again. A watch that reads that run from the transcript
// shows it so: not a pause after the first call's result (the other call
// waiting, as though its decision were not in the transcript next) and
// then a second start. That holds for a follower of a session without
// notifications that read the pause and the resumed run as they were
// stored, for one that resumes after the turn's stored start, and for
// a follower in another process that lost every notification of
// both runs (it reads them from the transcript when the next run
// begins), whose "ended" run must be the resumed turn's end, not a pause.
func TestStoredSessionApprovalNoPause(t *testing.T) {
	relayWaits(t, syncWait, time.Hour) // no probe
	save := tool.New("save", "Save a note.", func(ctx context.Context, a struct{ Text string }) (string, error) {
		return "saved " + a.Text, nil
	}, tool.RequireApproval())
	const prompt = "/call save {\"Text\":\"milk\"}\n/call save {\"Text\":\"eggs\"}"
	// ends collects each turn end's status and text from a watch, up to n.
	ends := func(t *testing.T, seq iter.Seq2[Event, error], n int) []string {
		t.Helper()
		var got []string
		text := ""
		for ev, err := range seq {
			if err != nil {
				t.Error(err)
				return got
			}
			text += ev.Text
			if ev.Kind == EventTurnEnd {
				got = append(got, string(ev.Result.Status)+": "+text)
				text = ""
				if len(got) == n {
					break
				}
			}
		}
		return got
	}
	// run pauses the turn on both calls and approves the first for the
	// session: it returns the pause and the resumed run's result.
	run := func(t *testing.T, sess *Session) (paused, resumed *Result) {
		t.Helper()
		paused, err := sess.Send(t.Context(), prompt)
		if err != nil || paused.Status != StatusAwaitingApproval || len(paused.Pending) != 2 {
			t.Fatalf("Send = %+v, %v; want a pause on two calls", paused, err)
		}
		resumed, err = sess.Approve(t.Context(), paused.Pending[0].ID, transcript.ApprovalScopeSession)
		if err != nil || resumed.Status != transcript.StatusOK {
			t.Fatalf("Approve = %+v, %v; want the turn's end", resumed, err)
		}
		return paused, resumed
	}
	quietPair := func(t *testing.T) (runs, watches *Session) {
		mem := memstore.New()
		// Neither store has notifications: the watch reads the transcript.
		ra, _ := New(Config{Store: struct{ store.Store }{mem}, Model: echo.New(), Tools: []*tool.Tool{save}})
		wa, _ := New(Config{Store: struct{ store.Store }{mem}, Model: echo.New()})
		runs, _ = ra.Session(t.Context(), "s")
		watches, _ = wa.Session(t.Context(), "s")
		return runs, watches
	}

	t.Run("follow through the transcript", func(t *testing.T) {
		rs, ws := quietPair(t)
		ready := make(chan struct{})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		got := make(chan []string, 1)
		go func() {
			got <- ends(t, ws.Watch(ctx, WatchOptions{Follow: true, Ready: func() { close(ready) }}), 2)
		}()
		<-ready
		paused, resumed := run(t, rs)
		want := []string{string(StatusAwaitingApproval) + ": " + paused.Text, string(resumed.Status) + ": " + resumed.Text}
		if g := <-got; !slices.Equal(g, want) {
			t.Fatalf("the follower's turn ends: %q, want %q", g, want)
		}
	})

	t.Run("after a stored id before the pause", func(t *testing.T) {
		rs, ws := quietPair(t)
		paused, resumed := run(t, rs)
		// The watcher had the turn's start from the transcript.
		after := EventID{Pos: 0, N: storedBase}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		want := []string{string(StatusAwaitingApproval) + ": " + paused.Text, string(resumed.Status) + ": " + resumed.Text}
		if g := ends(t, ws.Watch(ctx, WatchOptions{After: after, Follow: true}), 2); !slices.Equal(g, want) {
			t.Fatalf("a watch after %s: %q, want %q", after, g, want)
		}
	})

	t.Run("follower lost both runs", func(t *testing.T) {
		mem := memstore.New()
		var hushed atomic.Int64 // runs before this position lose every notification
		hushed.Store(math.MaxInt64)
		lose := func(_ int, msg []byte) bool {
			var m relayMsg
			return json.Unmarshal(msg, &m) == nil && m.Pos < hushed.Load()
		}
		runs, err := New(Config{Store: &lostRun{basicNotifier: &basicNotifier{mem: mem}, lose: lose}, Model: echo.New(), Tools: []*tool.Tool{save}})
		if err != nil {
			t.Fatal(err)
		}
		watches, err := New(Config{Store: &basicNotifier{mem: mem}, Model: echo.New()})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := watches.Session(t.Context(), "s")
		texts := followTexts(t, other)
		time.Sleep(syncWait + 200*time.Millisecond) // the first sync went unanswered: no run
		rs, _ := runs.Session(t.Context(), "s")
		paused, resumed := run(t, rs)
		entries, err := rs.Transcript(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		hushed.Store(int64(len(entries))) // the next run is heard
		next, err := rs.Send(t.Context(), "hi")
		if err != nil {
			t.Fatal(err)
		}
		wantTexts(t, texts, paused.Text, resumed.Text, next.Text)
	})
}
