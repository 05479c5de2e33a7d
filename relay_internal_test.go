package spool

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// snapFor reads the nonce of a snap as json.Marshal encodes relayMsg,
// and nothing from any other message: if the field order changed, every
// watcher would decode every other watcher's snap again (O(W²)).
func TestSnapFor(t *testing.T) {
	b, err := json.Marshal(relayMsg{T: "snap", Nonce: "n1", Pos: 3, Events: []Event{{ID: "3.1", Kind: EventText, Text: `"nonce":"x"`}}, Open: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := snapFor(b); !ok || n != "n1" {
		t.Fatalf("snapFor(%s) = %q, %v", b, n, ok)
	}
	for _, m := range []relayMsg{{T: "sync", Nonce: "n1"}, {T: "ev", Pos: 1, Event: &Event{ID: "1.1"}}, {T: "end", Pos: 1}, {T: "stop"}} {
		b, _ := json.Marshal(m)
		if n, ok := snapFor(b); ok {
			t.Fatalf("snapFor(%s) = %q, true", b, n)
		}
	}
}

// Whatever the bytes, snapFor never claims a nonce that decoding the
// message as a snap would not give.
func FuzzSnapFor(f *testing.F) {
	for _, s := range []string{`{"t":"snap","nonce":"a","pos":1}`, `{"t":"snap","nonce":"`, `{"t":"ev"}`, `{"t":"snap","nonce":"a\"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := snapFor(b)
		if !ok {
			return
		}
		var m relayMsg
		if json.Unmarshal(b, &m) == nil && (m.T != "snap" || m.Nonce != n) {
			t.Fatalf("snapFor(%q) = %q; decoded %q %q", b, n, m.T, m.Nonce)
		}
	})
}

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

// A relayed watcher that takes the run's process for gone in the middle
// of a step (its probe is not answered) follows the run through the
// transcript, and yields of the stored step only what it did not have:
// the text it gets, live and then stored, is the answer exactly, once.
func TestProbeMidStep(t *testing.T) {
	oldSync, oldProbe := syncWait, probeAfter
	syncWait, probeAfter = 50*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { syncWait, probeAfter = oldSync, oldProbe })
	ctx := context.Background()
	mem := memstore.New()
	gate := make(chan struct{})
	runs, err := New(Config{Store: mem, Model: gatedModel{gate}})
	if err != nil {
		t.Fatal(err)
	}
	ws := &muteStore{Store: mem, read: make(chan struct{})}
	watches, err := New(Config{Store: ws, Model: gatedModel{gate}})
	if err != nil {
		t.Fatal(err)
	}
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
