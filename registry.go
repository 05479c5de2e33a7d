package spool

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
)

// registry serializes calls per session, first come first served, and
// caches each session's state between calls so a call on a long session
// does not read its whole transcript again. Idle sessions' slots are kept
// in least-recently-used order up to a bound.
type registry struct {
	mu    sync.Mutex
	slots map[store.Key]*slot
	idle  *list.List // of *slot, least recently used at the front
	max   int
}

// slot is one session's place in the registry. Its st field belongs to
// whoever holds the slot.
type slot struct {
	key     store.Key
	held    bool
	waiters []chan struct{}
	refs    int           // holders and waiters
	writers int           // holders and waiters that write (access writing and turning)
	turns   int           // those that run a turn (access turning)
	elem    *list.Element // in idle, when refs == 0
	st      *state        // cached state; nil when unknown
	// abandoned is a turn this process started and could not end (its
	// store failed): the next call closes it at once, without waiting for
	// it as if another process were running it.
	abandoned string
	// compactFailures counts the automatic compactions that failed in a
	// row; none is tried again before compactAfter.
	compactFailures int
	compactAfter    time.Time
	// overflowed says that the session's last turn was refused as longer
	// than the model's context window: the automatic compaction after it
	// runs whatever its thresholds say, until one succeeds.
	overflowed bool
}

func newRegistry(max int) *registry {
	return &registry{slots: map[store.Key]*slot{}, idle: list.New(), max: max}
}

// acquire waits for the session's turn, in arrival order, until ctx is
// done. A writer (access writing or turning), and a turn among them, is
// counted until its release, so that writing and turning report it.
func (r *registry) acquire(ctx context.Context, k store.Key, mode access) (*slot, error) {
	r.mu.Lock()
	s := r.slots[k]
	if s == nil {
		s = &slot{key: k}
		r.slots[k] = s
	}
	if s.elem != nil {
		r.idle.Remove(s.elem)
		s.elem = nil
	}
	s.refs++
	s.count(mode, 1)
	if !s.held {
		s.held = true
		r.mu.Unlock()
		return s, nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	r.mu.Unlock()

	select {
	case <-ch:
		return s, nil
	case <-ctx.Done():
		r.mu.Lock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				s.count(mode, -1)
				r.unref(s)
				r.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		r.mu.Unlock()
		// The slot was handed to us as we gave up: pass it on.
		r.release(s, mode)
		return nil, ctx.Err()
	}
}

// count adds n to the writers (access writing and turning) and the turns
// (turning) of s, as mode is; r.mu is held.
func (s *slot) count(mode access, n int) {
	if mode != reading {
		s.writers += n
	}
	if mode == turning {
		s.turns += n
	}
}

// release hands the slot to the next waiter, or frees it; mode is
// acquire's.
func (r *registry) release(s *slot, mode access) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.count(mode, -1)
	if len(s.waiters) > 0 {
		next := s.waiters[0]
		s.waiters = s.waiters[1:]
		r.unref(s)
		close(next) // the slot stays held, now by the waiter
		return
	}
	s.held = false
	r.unref(s)
}

// writing reports whether a call of this process that writes (a turn, an
// approval's resumed turn) holds session k or waits for it.
func (r *registry) writing(k store.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.slots[k]
	return s != nil && s.writers > 0
}

// turning reports whether a turn of this process (access turning) holds
// session k or waits for it.
func (r *registry) turning(k store.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.slots[k]
	return s != nil && s.turns > 0
}

// unref drops one reference; r.mu is held.
func (r *registry) unref(s *slot) {
	s.refs--
	if s.refs > 0 || s.held {
		return
	}
	s.elem = r.idle.PushBack(s)
	for r.idle.Len() > r.max {
		old := r.idle.Remove(r.idle.Front()).(*slot)
		old.elem = nil
		delete(r.slots, old.key)
	}
}
