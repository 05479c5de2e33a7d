package filestore

import (
	"os"
	"sync"
	"time"
)

// handles keeps the transcripts that appends used open between appends,
// so that the appends of a turn (and of a busy session) do not each open
// and close the file: a path walk in the kernel and three system calls of
// the dozen an append used to make.
//
// A kept file holds no lock while it waits here: the lock is taken on it
// for each append and released after, as on a file opened for the append,
// so readers and other processes see no difference. A file another process
// deleted, or renamed another over (Reseal), while it waited here is
// noticed when the next append locks it (it has no name left, see
// openSession) and opened again by name. This process's own Delete and
// Reseal drop the file first, so that a deleted transcript's space is not
// kept.
//
// At most maxHandles files are kept; the least recently used goes when
// another comes, every file idle for handleIdle is closed, and Close closes
// them all. On Windows nothing is kept (see keepHandles): a deleted file
// that a handle still holds keeps its name there until the handle closes,
// so a session deleted by another process could not be made again.
type handles struct {
	mu     sync.Mutex
	files  map[string]kept // by path; a file being used is not here
	timer  *time.Timer     // the next sweep of idle files; nil when none is due
	closed bool
}

type kept struct {
	f    *os.File
	used time.Time
}

const maxHandles = 32

// handleIdle is how long a kept file waits for its next append (a variable
// for tests).
var handleIdle = 2 * time.Second

// take returns the kept file of path, removed from the set (the caller owns
// it until it puts it back), or nil.
func (h *handles) take(path string) *os.File {
	if !keepHandles {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k, ok := h.files[path]
	if !ok {
		return nil
	}
	delete(h.files, path)
	return k.f
}

// put keeps f, the transcript at path, unlocking it; it closes f instead
// when the set is closed or the unlock fails.
func (h *handles) put(path string, f *os.File) {
	if !keepHandles || unlockFile(f) != nil {
		unlockAndClose(f)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		f.Close()
		return
	}
	if h.files == nil {
		h.files = map[string]kept{}
	}
	var evict *os.File
	if old, ok := h.files[path]; ok {
		evict = old.f // another Store call's open of the same file
	} else if len(h.files) >= maxHandles {
		var oldest string
		for p, k := range h.files {
			if oldest == "" || k.used.Before(h.files[oldest].used) {
				oldest = p
			}
		}
		evict = h.files[oldest].f
		delete(h.files, oldest)
	}
	h.files[path] = kept{f: f, used: time.Now()}
	if h.timer == nil {
		h.timer = time.AfterFunc(handleIdle, h.sweep)
	}
	h.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
}

// drop closes the kept file of path, if any.
func (h *handles) drop(path string) {
	if f := h.take(path); f != nil {
		f.Close()
	}
}

// sweep closes the files idle for handleIdle, and comes again while any
// are kept.
func (h *handles) sweep() {
	h.mu.Lock()
	var idle []*os.File
	now := time.Now()
	for p, k := range h.files {
		if now.Sub(k.used) >= handleIdle {
			idle = append(idle, k.f)
			delete(h.files, p)
		}
	}
	h.timer = nil
	if len(h.files) > 0 && !h.closed {
		h.timer = time.AfterFunc(handleIdle, h.sweep)
	}
	h.mu.Unlock()
	for _, f := range idle {
		f.Close()
	}
}

// close closes every kept file; files put back after it are closed.
func (h *handles) close() {
	h.mu.Lock()
	h.closed = true
	files := h.files
	h.files = nil
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.mu.Unlock()
	for _, k := range files {
		k.f.Close()
	}
}
