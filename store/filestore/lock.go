package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spool-go/spool/store"
)

// Lock takes the session's turn lock: an exclusive OS file lock on
// <id>.jsonl.lock, a file of its own so that it never stands in the way of
// the short lock each append and read takes on the transcript. It excludes
// other holders in this process and in every other process on the machine,
// and the OS releases it if the process dies. It waits until the lock is
// free or ctx is done.
func (s *Store) Lock(ctx context.Context, key store.Key) (func(), error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	ix, err := s.index(ctx, key.Namespace(), true)
	if err != nil {
		return nil, err
	}
	if err := ix.checkCase(key.ID); err != nil {
		return nil, err
	}
	path := filepath.Join(ix.dir, key.ID+lockExt)
	for {
		f, err := openLockFile(ix, path)
		if err != nil {
			return nil, err
		}
		if err := lockCtx(ctx, f, true); err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil && !unlinked(st, path) {
			var once sync.Once
			return func() {
				once.Do(func() {
					unlockFile(f)
					f.Close()
				})
			}, nil
		}
		// Delete removed the file while we waited: a lock on it no longer
		// excludes anyone. Lock the new one.
		unlockFile(f)
		f.Close()
	}
}

func openLockFile(ix *index, path string) (*os.File, error) {
	f, err := openFile(path, os.O_RDWR, 0)
	if err == nil {
		return f, nil
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	err = ix.changeDir(func() error {
		f, err = openFile(path, os.O_RDWR|os.O_CREATE, fileMode)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	fixMode(f)
	return f, nil
}

// lockCtx takes the lock on f, waiting until ctx is done. A blocked flock
// or LockFileEx cannot be interrupted, and one left behind in a goroutine
// would hold the file and the goroutine until the lock came, so a wait
// that ctx can end polls the non-blocking form instead (see pollLock); only
// a context that can never end waits in the blocking call. On any error f
// is closed: lockCtx owns it then.
func lockCtx(ctx context.Context, f *os.File, exclusive bool) error {
	ok, err := tryLockFile(f, exclusive)
	switch {
	case err != nil:
		err = fmt.Errorf("filestore: %w", err)
	case ok:
		return nil
	case ctx.Done() == nil:
		if err = lockFile(f, exclusive); err != nil {
			err = fmt.Errorf("filestore: %w", err)
		}
	default:
		err = pollLock(ctx, f, exclusive)
	}
	if err != nil {
		f.Close()
	}
	return err
}

// The waits between attempts of pollLock: the first is short, since most
// locks are held for one append (a write and its sync), and they grow to a
// bound so that a long wait costs little and still notices the release
// soon after it happens.
const (
	minLockPoll = time.Millisecond
	maxLockPoll = 50 * time.Millisecond
)

// pollLock tries the lock on f until it gets it or ctx is done, waiting
// minLockPoll after the first try and twice as long after each next one,
// up to maxLockPoll. Nothing outlives the call. When ctx ends first it
// returns ctx.Err() itself.
func pollLock(ctx context.Context, f *os.File, exclusive bool) error {
	wait := minLockPoll
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		ok, err := tryLockFile(f, exclusive)
		if err != nil {
			return fmt.Errorf("filestore: %w", err)
		}
		if ok {
			return nil
		}
		wait = min(2*wait, maxLockPoll)
		t.Reset(wait)
	}
}

// removeLockFile removes a deleted session's turn lock file unless a turn
// holds it (then it stays, harmless, until the session's next delete).
func removeLockFile(path string) {
	f, err := openFile(path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if ok, _ := tryLockFile(f, true); ok {
		os.Remove(path)
		unlockFile(f)
	}
}

// Namespaces returns every namespace that holds sessions, agents in name order,
// each project scope before its users'.
func (s *Store) Namespaces(ctx context.Context) ([]store.Namespace, error) {
	agents, err := readDirNames(s.root)
	if err != nil {
		return nil, err
	}
	var out []store.Namespace
	for _, agent := range agents {
		var namespaces []store.Namespace
		if checkNamespace(store.Namespace{Agent: agent}) != nil {
			continue
		}
		namespaces = append(namespaces, store.Namespace{Agent: agent})
		owners, err := readDirNames(filepath.Join(s.root, agent, usersDir))
		if err != nil {
			return nil, err
		}
		for _, owner := range owners {
			namespaces = append(namespaces, store.Namespace{Agent: agent, Owner: owner})
		}
		for _, ns := range namespaces {
			if checkNamespace(ns) != nil {
				continue
			}
			x, err := s.index(ctx, ns, false)
			if err != nil {
				return nil, err
			}
			if x == nil {
				continue
			}
			if err := s.ready(ctx, x); err != nil {
				return nil, err
			}
			x.mu.Lock()
			n := len(x.recs)
			x.mu.Unlock()
			if n > 0 {
				out = append(out, ns)
			}
		}
	}
	return out, nil
}

// readDirNames returns the names of the folders in dir, sorted; none when
// dir does not exist.
func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("filestore: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
