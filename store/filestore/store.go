package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-go/spool/seal"
	"github.com/spool-go/spool/store"
)

// Store is the file store. It is safe for concurrent use, and several
// Stores, in one process or many, may share a root.
type Store struct {
	root string
	cfg  config
	// fold is set when the file system folds case, so that names that
	// differ only in case must be refused (tests set it to check the
	// logic on a file system that does not).
	fold bool

	mu      sync.Mutex                 // guards the following fields
	indexes map[store.Namespace]*index // the most recently used, at most maxIndexes
	tick    uint64                     // the clock of index.used
	closed  bool

	// handles keeps the transcripts appends used open (handles.go), each
	// with its session (sessions.go).
	handles handles

	// writer is this Store's writer mark, made at its first write, and
	// markedNS the namespaces whose indexes name it (marks.go); every
	// append and delete holds wmu to read, and Close to write.
	writer   *writerMark
	markedNS map[store.Namespace]bool
	wmu      sync.RWMutex
	// runlock is wmu.RUnlock, made once: markWriter returns it to every
	// append, and a method value made there would be an allocation each.
	runlock func()

	// marked is set once the encryption marker is known to be there for
	// the protector's key (see marker.go).
	marked atomic.Bool
	markMu sync.Mutex // serializes writing the marker

	// hot is the index used last, found without mu (index); nil once
	// closed or evicted.
	hot atomic.Pointer[index]

	// flushTimer is the next flush of deferred records (pending.go),
	// guarded by mu; flushMu serializes flushes.
	flushTimer *time.Timer
	flushMu    sync.Mutex

	live notifier // notify_unix.go
}

type config struct {
	retention store.Retention
	now       func() time.Time
	protector seal.Protector
}

// An Option configures a Store. New fails with the error of the first
// option that refuses its argument.
type Option func(*config) error

// WithRetention sets which sessions of each namespace the store keeps; it is
// enforced when a session is created. store.Retention{} keeps everything.
// The default is store.DefaultRetention.
func WithRetention(r store.Retention) Option {
	return func(c *config) error {
		c.retention = r
		return nil
	}
}

// WithClock sets the clock retention measures idleness against (time.Now by
// default).
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now != nil {
			c.now = now
		}
		return nil
	}
}

// WithProtector encrypts every line with p, bound to its session and
// position (see the package documentation). A store must always be opened
// with the same protector, or a Keyring that holds its key: New refuses an
// encrypted store opened without one, or with one that lacks its key.
func WithProtector(p seal.Protector) Option {
	return func(c *config) error {
		c.protector = p
		return nil
	}
}

// Errors of this store, besides the store package's sentinels.
var (
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("filestore: store is closed")
	// ErrEncrypted: a sealed line in a store opened without a protector.
	ErrEncrypted = errors.New("filestore: the session is encrypted; open the store with its protector (filestore.WithProtector)")
)

// New returns the store of the sessions under root, which need not exist
// yet: folders are made, 0700, when the first session is written. ctx
// bounds the checks New makes (see below); the Store outlives it.
//
// An encrypted store (one with the marker a protector's first append
// writes, see the package documentation) opened without a protector fails
// with ErrEncrypted, and opened with a protector that lacks its key with an
// error matching seal.ErrWrongKey; a store holding plain sessions opened
// with a protector fails with ErrUnencrypted. New writes nothing.
func New(ctx context.Context, root string, opts ...Option) (*Store, error) {
	if platformErr != nil {
		return nil, platformErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if root == "" {
		return nil, errors.New("filestore: empty root folder")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("filestore: root %q: %w", root, err)
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("filestore: root %s is not a folder", abs)
	}
	cfg := config{retention: store.DefaultRetention, now: time.Now}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	s := &Store{
		root:     abs,
		cfg:      cfg,
		fold:     foldsCase(abs),
		indexes:  map[store.Namespace]*index{},
		markedNS: map[store.Namespace]bool{},
	}
	s.runlock = s.wmu.RUnlock
	marked, err := s.checkMarker()
	if err != nil {
		return nil, err
	}
	if !marked && cfg.protector != nil {
		// Not encrypted yet: refuse plain sessions (or ones under another
		// key) now rather than report them one read at a time.
		if err := s.checkUnmarked(); err != nil {
			return nil, err
		}
	}
	s.marked.Store(marked)
	return s, nil
}

// Root returns the folder the store keeps its sessions in.
func (s *Store) Root() string { return s.root }

// Close closes the index files and the transcripts kept open between
// appends. Calls after Close fail with ErrClosed.
func (s *Store) Close() error {
	s.wmu.Lock() // after the writes under way
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.hot.Store(nil)
	indexes := s.indexes
	s.indexes = map[store.Namespace]*index{}
	writer, marked := s.writer, s.markedNS
	s.writer, s.markedNS = nil, map[store.Namespace]bool{}
	if s.flushTimer != nil {
		s.flushTimer.Stop()
		s.flushTimer = nil
	}
	s.mu.Unlock()
	// The deferred records before the marks close (C says every record of
	// the writer is written).
	s.flushMu.Lock()
	all := make([]*index, 0, len(indexes))
	for _, ix := range indexes {
		all = append(all, ix)
	}
	s.flush(all, true)
	s.flushMu.Unlock()
	var first error
	for _, ix := range indexes {
		if err := ix.drop(); err != nil && first == nil {
			first = err
		}
	}
	s.handles.close()
	s.unmarkWriter(writer, marked)
	s.live.Close()
	return first
}

// index returns the index of ix, making its folder when create is set.
// Without create it returns nil for a namespace whose folder does not exist:
// there is nothing in it. The index loads lazily: the records of the index
// file when a session's record is first needed (catchUpLocked), the comparison
// with the folder when a listing is (ready).
func (s *Store) index(ctx context.Context, ns store.Namespace, create bool) (*index, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if x := s.hot.Load(); x != nil && x.key == ns {
		// The namespace used last: no s.mu, which every writer of the
		// Store would take.
		return x, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	x := s.indexes[ns]
	if x != nil {
		s.tick++
		x.used = s.tick
	}
	s.mu.Unlock()
	made := false
	var madeAt os.FileInfo
	if x == nil {
		dir := s.namespaceDir(ns)
		if err := s.checkNamespaceCase(ns); err != nil {
			return nil, err
		}
		if _, err := os.Stat(dir); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("filestore: %w", err)
			}
			if !create {
				return nil, nil
			}
			if err := mkdirs(dir); err != nil {
				return nil, err
			}
			made = true
			madeAt, _ = os.Stat(dir)
			// Another process may have made the same folder in other case
			// at the same moment.
			if err := s.checkNamespaceCase(ns); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		var evicted []*index
		s.tick++
		if x = s.indexes[ns]; x == nil {
			x = newIndex(s, ns, dir)
			if madeAt != nil {
				// The folder as this process made it, empty: its changes
				// from now on are this process's to record (dirchange.go)
				// while the validation below, or before it the appends of
				// other goroutines, go on.
				x.dirMod = madeAt.ModTime()
			}
			x.used = s.tick // the newest: never the one evicted for it
			s.indexes[ns] = x
			evicted = s.evictLocked()
		}
		x.used = s.tick
		s.mu.Unlock()
		for _, old := range evicted {
			old.drop()
		}
	}
	s.hot.Store(x)
	if made {
		// A new folder: comparing it with an index costs nothing, and
		// writes the index that appends will add their records to.
		if err := s.ensureLoaded(ctx, x); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// maxIndexes bounds the namespaces a Store keeps in memory, each with its index
// and an open index file, so that a server with many users' namespaces keeps
// neither memory nor file descriptors for all of them.
const maxIndexes = 256

// evictLocked drops the least recently used namespaces while there are too
// many, and returns them for their index files to be closed. One that
// could not go when it was the oldest (deferred records, sessions in use)
// goes at a later call, so the bound holds again once they are done. An
// operation still under way on one finishes on its own copy: two views of
// one folder in one process keep each other right the same way two
// processes do, through the files. The caller holds s.mu.
func (s *Store) evictLocked() []*index {
	var evicted []*index
	for len(s.indexes) > maxIndexes {
		var old *index
		for _, x := range s.indexes {
			if x.pending.Load() > 0 || x.live.Load() > 0 {
				// Deferred records to write first (pending.go), or
				// sessions in use or with kept files (sessions.go).
				continue
			}
			if old == nil || x.used < old.used {
				old = x
			}
		}
		if old == nil {
			break
		}
		delete(s.indexes, old.key)
		s.hot.CompareAndSwap(old, nil)
		evicted = append(evicted, old)
	}
	return evicted
}

// checkNamespaceCase refuses a namespace whose agent or owner folder exists in
// other case, on file systems that fold case.
func (s *Store) checkNamespaceCase(ns store.Namespace) error {
	if !s.fold {
		return nil
	}
	if err := checkFolder(s.root, ns.Agent, "agent"); err != nil {
		return err
	}
	if ns.Owner != "" {
		return checkFolder(filepath.Join(s.root, ns.Agent, usersDir), ns.Owner, "owner")
	}
	return nil
}

var (
	_ store.Store           = (*Store)(nil)
	_ store.BatchAppender   = (*Store)(nil)
	_ store.BulkAppender    = (*Store)(nil)
	_ store.RangeReader     = (*Store)(nil)
	_ store.TailReader      = (*Store)(nil)
	_ store.Stater          = (*Store)(nil)
	_ store.Pruner          = (*Store)(nil)
	_ store.Locker          = (*Store)(nil)
	_ store.NamespaceLister = (*Store)(nil)
)
