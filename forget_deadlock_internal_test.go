package spool

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// stopHookStore is a memory store whose listeners' stop, for key, calls
// hook first.
type stopHookStore struct {
	*memstore.Store
	key  store.Key
	hook func()
}

func (s *stopHookStore) ListenFunc(key store.Key, fn func([]byte)) (func(), error) {
	stop, err := s.Store.ListenFunc(key, fn)
	if err != nil || key != s.key {
		return stop, err
	}
	return func() { s.hook(); stop() }, nil
}

// The hub forgets a due run, which ends its relay's listener, while the
// store delivers a sync that resumes in an earlier run of another
// session (its answer reads the hub's chain of runs). A store that calls
// its listeners under its own lock (the memory store's Hub) takes that
// lock to stop one: the hub forgets without its own lock held, or the
// two wait on each other for ever, and with them every turn and watcher
// of the agent.
func TestForgetWhileSyncDelivered(t *testing.T) {
	mem := memstore.New()
	ka, kb := store.Key{Agent: "default", ID: "a"}, store.Key{Agent: "default", ID: "b"}
	stopping, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	st := &stopHookStore{Store: mem, key: ka, hook: func() {
		once.Do(func() { close(stopping); <-proceed })
	}}
	// Called before b's relay (it listens first), under the store's lock:
	// once it is, the store holds that lock until b's relay answered.
	sync1 := []byte(`{"t":"sync","nonce":"x","after":"0.1"}`)
	inNotify := make(chan struct{})
	var inOnce sync.Once
	stopTest, _ := mem.ListenFunc(kb, func(b []byte) {
		if bytes.Equal(b, sync1) {
			inOnce.Do(func() { close(inNotify) })
		}
	})
	ag, err := New(Config{Store: st, Model: echo.New()})
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := ag.Session(t.Context(), "a")
	streamAll(t, sa, "one") // a's run: the first due
	sb, _ := ag.Session(t.Context(), "b")
	streamAll(t, sb, "one")
	streamAll(t, sb, "two") // b's newest run, after an earlier one
	var m relayMsg
	if err := json.Unmarshal(sync1, &m); err != nil || m.After != "0.1" {
		t.Fatalf("sync %+v: %v", m, err)
	}
	h := ag.live
	h.mu.Lock()
	h.recent[0].due = time.Now().Add(-time.Second)
	h.mu.Unlock()
	forgot := make(chan struct{})
	go func() { h.forgetDue(); close(forgot) }()
	<-stopping // the hub ends a's relay's listener
	go func() { _ = mem.Notify(t.Context(), kb, sync1) }()
	<-inNotify
	close(proceed)
	select {
	case <-forgot:
	case <-time.After(5 * time.Second):
		t.Fatal("the hub forgetting a run and the store delivering a sync to another session's run wait on each other")
	}
	stopTest()
}

// A session's channel for its next run goes with the last of it: a
// watcher that left while the hub still kept the session's run, which
// the hub then forgot, leaves nothing of the session in the hub (a
// server watched on a million sessions kept an entry for each).
func TestForgetLeavesNoNext(t *testing.T) {
	h := newLiveHub(0, 0)
	key := store.Key{Agent: "default", ID: "n"}
	run, _ := h.begin(key, "t1", 0, func() {})
	if _, _, err := h.join(key); err != nil {
		t.Fatal(err)
	}
	h.finish(run, false)
	h.leave(key)
	h.mu.Lock()
	h.recent[0].due = time.Now().Add(-time.Second)
	h.mu.Unlock()
	h.forgetDue()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.next) != 0 || len(h.turns) != 0 || len(h.watchers) != 0 {
		t.Fatalf("after the run was forgotten: %d next channels, %d runs, %d watcher counts; want none", len(h.next), len(h.turns), len(h.watchers))
	}
}
