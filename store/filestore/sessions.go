package filestore

import (
	"context"
	"os"
	"sync/atomic"
)

// session is what a Store keeps of one session while it is in use, or
// while its transcript is kept open between appends (handles.go): this
// process's lock on the session, so that the process's callers queue here
// (each giving up when its context ends) rather than each hold a thread in
// flock, while the file lock still excludes other processes; and the
// transcript itself. A session nobody holds or waits for and whose file is
// not kept is forgotten, so the Store does not grow with every session it
// ever touched.
//
// Sessions belong to their namespace's index, by id, so that an append
// finds its session under the index's mutex, which it takes anyway, and
// two sessions never wait for each other. The lock is a flag under that
// mutex: taking a free one and letting it go cost an append nothing more,
// and only a waiter makes a channel, through which the holder hands the
// session over. Should two views of one namespace coexist for a moment
// (see Store.evictLocked), each has its own sessions, and the file lock
// keeps their appends apart.
type session struct {
	ix   *index
	id   string
	path string

	// Guarded by ix.mu:
	held    bool          // someone holds the session
	waiting int           // callers waiting for it
	wake    chan struct{} // made for the first waiter: a value hands the session to one of them
	kept    bool          // f stays open between holds, in the Store's handles; written by the holder

	// Guarded by holding the session:
	f  *os.File // the transcript, kept open; nil when none is
	sf sfile    // the holder's view of f (openSession), here rather than allocated each time

	used atomic.Int64 // when f was last put back (since); read without holding
}

// lockSession takes this process's lock on session id, waiting until ctx
// is done. The caller releases it with unlockSession. With snap, when it
// takes the session without waiting, it also copies there what the index
// has of it, in the same hold of the index's mutex (see openSession).
func (ix *index) lockSession(ctx context.Context, id string, snap *snapshot) (*session, error) {
	ix.mu.Lock()
	ss := ix.sessions[id]
	if ss == nil {
		if ix.sessions == nil {
			ix.sessions = map[string]*session{}
		}
		ss = &session{ix: ix, id: id, path: sessionPath(ix.dir, id)}
		ix.sessions[id] = ss
		ix.live.Add(1)
	}
	if snap != nil && !ss.held {
		ix.snapshotLocked(id, snap)
	}
	if err := ss.holdLocked(ctx); err != nil {
		return nil, err
	}
	return ss, nil
}

// holdLocked takes ss, waiting until ctx is done; the caller holds ix.mu,
// which holdLocked releases.
func (ss *session) holdLocked(ctx context.Context) error {
	ix := ss.ix
	if !ss.held {
		ss.held = true
		ix.mu.Unlock()
		return nil
	}
	ss.waiting++
	if ss.wake == nil {
		ss.wake = make(chan struct{}, 1)
	}
	wake := ss.wake
	ix.mu.Unlock()
	select {
	case <-wake:
		return nil // handed over by releaseLocked
	case <-ctx.Done():
	}
	ix.mu.Lock()
	select {
	case <-wake:
		// Handed over as ctx ended: hand it on.
		ix.releaseLocked(ss)
	default:
		ss.waiting--
	}
	ix.forgetSessionLocked(ss)
	ix.mu.Unlock()
	return ctx.Err()
}

// unlockSession releases the lock lockSession took.
func (ix *index) unlockSession(ss *session) {
	ix.mu.Lock()
	// A kept file lost on the way (openSession failed after taking it)
	// is kept no more.
	lost := ss.kept && ss.f == nil
	if lost {
		ss.kept = false
	}
	ix.releaseLocked(ss)
	ix.forgetSessionLocked(ss)
	ix.mu.Unlock()
	if lost {
		ix.s.handles.unlist(ss)
	}
}

// releaseLocked lets ss go: to a waiter, if there is one, or free. The
// caller holds ix.mu.
func (ix *index) releaseLocked(ss *session) {
	if ss.waiting > 0 {
		ss.waiting--
		ss.wake <- struct{}{} // never blocks: one holder, so one value at most
		return
	}
	ss.held = false
}

// forgetSessionLocked forgets ss if nobody holds or waits for it and its
// file is not kept. The caller holds ix.mu.
func (ix *index) forgetSessionLocked(ss *session) {
	if !ss.held && ss.waiting == 0 && !ss.kept && ix.sessions[ss.id] == ss {
		delete(ix.sessions, ss.id)
		ix.live.Add(-1)
	}
}

// tryHold takes ss if it is free, without waiting, and hold waits for it
// as long as it takes: the handles use them to close a kept file.
// release lets it go.
func (ss *session) tryHold() bool {
	ix := ss.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ss.held {
		return false
	}
	ss.held = true
	return true
}

func (ss *session) hold() {
	ss.ix.mu.Lock()
	ss.holdLocked(context.Background())
}

func (ss *session) release() {
	ix := ss.ix
	ix.mu.Lock()
	ix.releaseLocked(ss)
	ix.forgetSessionLocked(ss)
	ix.mu.Unlock()
}
