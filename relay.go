package spool

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// Live turns across processes.
//
// When the store is a store.Notifier (the memory store's in-process hub;
// a store of one's own), every run is relayed: its events are notified on
// the session's key as they happen ("ev"), and its end ("end"); and the
// process running it listens on that key for "sync" (a watcher elsewhere
// asks for the run's events so far: the answer is a "snap" of them) and
// "stop" (Session.Stop from another process). A watcher in a process that
// does not run the turn listens, asks for a snap, and joins the two by
// event id: the same ids, so no gap and no repeat. The relay reads the
// run's events like any watcher, so it never slows the turn.

// relayMsg is one notification of the relay.
type relayMsg struct {
	T      string  `json:"t"`               // ev, end, sync, snap, stop
	Pos    int64   `json:"pos,omitempty"`   // the run (ev, end, snap)
	Event  *Event  `json:"ev,omitempty"`    // ev
	Events []Event `json:"evs,omitempty"`   // snap: the run's events so far
	Nonce  string  `json:"nonce,omitempty"` // sync, and the snap answering it
}

// syncWait is how long a watcher in a process that runs no turn of the
// session waits for a snap of a turn running elsewhere, before it takes
// it that none runs.
const syncWait = time.Second

func (a *Agent) notify(ctx context.Context, key store.Key, m relayMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return store.Notify(ctx, a.cfg.Store, key, b)
}

// relay relays run t through the store's notifications until it ends;
// with a store that has none it returns at once.
func (a *Agent) relay(t *liveTurn) {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := store.Listen(ctx, a.cfg.Store, t.key)
	if err != nil {
		cancel()
		return
	}
	go func() {
		defer cancel()
		for {
			select {
			case b, ok := <-ch:
				if !ok {
					return
				}
				var m relayMsg
				if json.Unmarshal(b, &m) != nil {
					continue
				}
				switch m.T {
				case "stop":
					t.cancel()
				case "sync":
					evs, _, _ := t.since(0)
					_ = a.notify(ctx, t.key, relayMsg{T: "snap", Pos: t.pos, Events: evs, Nonce: m.Nonce})
				}
			case <-t.ended:
				return
			}
		}
	}()
	go func() {
		n := 0
		for {
			evs, done, wake := t.since(n)
			for i := range evs {
				_ = a.notify(context.Background(), t.key, relayMsg{T: "ev", Pos: t.pos, Event: &evs[i]})
			}
			n += len(evs)
			if done && len(evs) == 0 {
				_ = a.notify(context.Background(), t.key, relayMsg{T: "end", Pos: t.pos})
				return
			}
			if len(evs) == 0 {
				<-wake
			}
		}
	}()
}

// watchRelayed is Watch through the store's notifications, for a session
// whose runs this process does not have. It reports false when the store
// has none.
func (s *Session) watchRelayed(ctx context.Context, opt WatchOptions, yield func(Event, error) bool) bool {
	after, follow := opt.After, opt.Follow
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := store.Listen(ctx, s.a.cfg.Store, s.key)
	if errors.Is(err, errors.ErrUnsupported) {
		return false
	}
	if err != nil {
		yield(Event{}, err)
		return true
	}
	nonce := transcript.NewID(s.a.now())
	if err := s.a.notify(ctx, s.key, relayMsg{T: "sync", Nonce: nonce}); err != nil {
		yield(Event{}, err)
		return true
	}
	if opt.Ready != nil {
		opt.Ready()
	}
	known := map[int64]map[int64]Event{} // each run's events by place, as far as known
	keep := func(pos int64, ev Event) {
		id, err := ParseEventID(ev.ID)
		if err != nil || id.Pos != pos || (pos == after.Pos && id.N <= after.N) || pos < after.Pos {
			return
		}
		if known[pos] == nil {
			known[pos] = map[int64]Event{}
		}
		known[pos][id.N] = ev
	}
	synced := false
	timer := time.NewTimer(syncWait)
	defer timer.Stop()
	// flush yields what is known after `after` in run pos, in order,
	// without a gap; it reports false when the watch is over.
	flush := func(pos int64) bool {
		if pos < after.Pos || (after.IsZero() && !synced) {
			return true // where the watch starts is not known yet
		}
		n := int64(0)
		if pos == after.Pos {
			n = after.N
		}
		for {
			ev, ok := known[pos][n+1]
			if !ok {
				return true
			}
			delete(known[pos], n+1)
			n++
			after = EventID{Pos: pos, N: n}
			if !yield(ev, nil) || (ev.Kind == EventTurnEnd && !follow) {
				return false
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return true
		case <-timer.C:
			if !synced {
				synced = true
				if !follow {
					return true // no turn runs anywhere
				}
				// What came meanwhile is of runs that began after the
				// watch did.
				for _, pos := range slices.Sorted(maps.Keys(known)) {
					if !flush(pos) {
						return true
					}
				}
			}
		case b, ok := <-ch:
			if !ok {
				return true // dropped as too slow: the client reconnects
			}
			var m relayMsg
			if json.Unmarshal(b, &m) != nil {
				continue
			}
			switch m.T {
			case "ev":
				if m.Event == nil {
					continue
				}
				keep(m.Pos, *m.Event)
				if !flush(m.Pos) {
					return true
				}
			case "snap":
				if m.Nonce != nonce {
					continue
				}
				if !synced && after.IsZero() {
					// The watch starts at the running run's beginning;
					// a run already over is not replayed.
					after = EventID{Pos: m.Pos}
					if n := len(m.Events); n > 0 && m.Events[n-1].Kind == EventTurnEnd {
						after.N = maxEvents
					}
				}
				synced = true
				for _, ev := range m.Events {
					keep(m.Pos, ev)
				}
				if !flush(m.Pos) {
					return true
				}
			}
		}
	}
}
