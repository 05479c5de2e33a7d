package filestore

import (
	"sync"
	"sync/atomic"
	"time"
)

// handles keeps the transcripts that appends used open between appends,
// so that the appends of a turn (and of a busy session) do not each open
// and close the file: a path walk in the kernel and three system calls of
// the dozen an append used to make. Each kept file stays with its session
// (session.f): the next append takes it under the session's lock with no
// lookup here, and puts it back with a store of the time.
//
// A kept file holds no lock while it waits: the lock is taken on it for
// each append and released after, as on a file opened for the append, so
// readers and other processes see no difference. A file another process
// deleted, or renamed another over (Reseal), while it waited is noticed
// when the next append locks it (it has no name left, see openSession) and
// opened again by name. This process's own Delete and Reseal drop the file
// first, so that a deleted transcript's space is not kept.
//
// At most maxHandles files are kept; the least recently used goes when
// another comes, every file idle for handleIdle is closed, and Close closes
// them all. A file in use (its session held) is never closed under its
// holder: the bound and the sweep leave it, and Close waits for it to be
// put back. On Windows nothing is kept (see keepHandles):
// a deleted file that a handle still holds keeps its name there until the
// handle closes, so a session deleted by another process could not be
// made again.
type handles struct {
	mu    sync.Mutex
	kept  map[*session]struct{} // the sessions whose files are kept
	timer *time.Timer           // the next sweep of idle files; nil when none is due
	// closed is set once by close, under mu; put reads it without.
	closed atomic.Bool
}

const maxHandles = 32

// handleIdle is how long a kept file waits for its next append (a variable
// for tests).
var handleIdle = 2 * time.Second

// epoch is what since counts from: a monotonic clock, cheaper to keep in a
// word than a time.Time.
var epoch = time.Now()

func since() int64 { return int64(time.Since(epoch)) }

// put puts back ss's file, unlocking it, for the next append; it closes it
// instead when files are not kept, the unlock fails, or the index or the
// handles are closed. The caller holds ss. A file kept already costs no
// lock here: only its holder writes ss.kept, and close waits for the
// holder of a kept file before closing it.
func (h *handles) put(ss *session) {
	f := ss.f
	ss.used.Store(since())
	if keepHandles && unlockFile(f) == nil {
		if ss.kept && !h.closed.Load() {
			return
		}
		ix := ss.ix
		ix.mu.Lock()
		keep := !ix.dropped
		ss.kept = keep
		ix.mu.Unlock()
		if keep && h.add(ss) {
			return
		}
	}
	ss.f = nil
	unlockAndClose(f)
	h.forget(ss)
}

// add notes ss's file as kept, closing the least recently used other one
// when there are too many, and reports whether it kept it (not once
// closed). The caller holds ss.
func (h *handles) add(ss *session) bool {
	h.mu.Lock()
	if h.closed.Load() {
		h.mu.Unlock()
		return false
	}
	if h.kept == nil {
		h.kept = map[*session]struct{}{}
	}
	h.kept[ss] = struct{}{}
	var evict *session
	if len(h.kept) > maxHandles {
		for k := range h.kept {
			if k != ss && (evict == nil || k.used.Load() < evict.used.Load()) {
				evict = k
			}
		}
	}
	if h.timer == nil {
		h.timer = time.AfterFunc(handleIdle, h.sweep)
	}
	h.mu.Unlock()
	if evict != nil {
		h.closeIdle(evict, since())
	}
	return true
}

// drop closes ss's kept file, if any. The caller holds ss.
func (h *handles) drop(ss *session) {
	if ss.f != nil {
		ss.f.Close()
		ss.f = nil
	}
	h.forget(ss)
}

// forget notes that ss keeps no file. The caller holds ss.
func (h *handles) forget(ss *session) {
	h.unlist(ss)
	ix := ss.ix
	ix.mu.Lock()
	ss.kept = false
	ix.forgetSessionLocked(ss)
	ix.mu.Unlock()
}

// unlist takes ss out of the kept files.
func (h *handles) unlist(ss *session) {
	h.mu.Lock()
	delete(h.kept, ss)
	h.mu.Unlock()
}

// closeIdle closes ss's kept file if nobody is using it and it was last
// put back before idleSince.
func (h *handles) closeIdle(ss *session, idleSince int64) {
	if !ss.tryHold() {
		return // in use: it is put back, and counted, after
	}
	if ss.used.Load() <= idleSince {
		h.drop(ss)
	}
	ss.release()
}

// sweep closes the files idle for handleIdle, and comes again while any
// are kept.
func (h *handles) sweep() {
	h.mu.Lock()
	cut := since() - int64(handleIdle)
	var idle []*session
	for ss := range h.kept {
		if ss.used.Load() <= cut {
			idle = append(idle, ss)
		}
	}
	h.mu.Unlock()
	for _, ss := range idle {
		h.closeIdle(ss, cut)
	}
	h.mu.Lock()
	h.timer = nil
	if len(h.kept) > 0 && !h.closed.Load() {
		h.timer = time.AfterFunc(handleIdle, h.sweep)
	}
	h.mu.Unlock()
}

// close closes every kept file, waiting for those in use to be put back;
// files put back after it are closed.
func (h *handles) close() {
	h.mu.Lock()
	h.closed.Store(true)
	kept := make([]*session, 0, len(h.kept))
	for ss := range h.kept {
		kept = append(kept, ss)
	}
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.mu.Unlock()
	for _, ss := range kept {
		ss.hold()
		h.drop(ss)
		ss.release()
	}
}
