package storekit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/spool-go/spool/store"
)

// LocalLocks is a Locker for one process: a lock per session key, made on
// first use and dropped when nobody holds or waits for it, so it does not
// grow with every session ever locked. A store whose data lives in the
// process (or a fallback where nothing better exists) can embed one. The
// zero value is ready to use.
type LocalLocks struct {
	mu    sync.Mutex
	byKey map[store.Key]*localLock
}

type localLock struct {
	held chan struct{} // full while the lock is held
	refs int           // holders and waiters
}

// Lock blocks until key's lock is held or ctx is done, and returns the
// function that releases it (safe to call more than once).
func (l *LocalLocks) Lock(ctx context.Context, key store.Key) (unlock func(), err error) {
	l.mu.Lock()
	if l.byKey == nil {
		l.byKey = map[store.Key]*localLock{}
	}
	k := l.byKey[key]
	if k == nil {
		k = &localLock{held: make(chan struct{}, 1)}
		l.byKey[key] = k
	}
	k.refs++
	l.mu.Unlock()

	select {
	case k.held <- struct{}{}:
	case <-ctx.Done():
		l.unref(key, k)
		return nil, ctx.Err()
	}
	h := &lockHold{l: l, key: key, k: k}
	return h.unlock, nil
}

// lockHold is one holding of a lock: its unlock is the function Lock
// returns, a method value, so a lock taken costs two allocations (this
// and the method value) rather than a sync.Once and two closures.
type lockHold struct {
	l    *LocalLocks
	key  store.Key
	k    *localLock
	done atomic.Bool
}

func (h *lockHold) unlock() {
	if h.done.CompareAndSwap(false, true) {
		<-h.k.held
		h.l.unref(h.key, h.k)
	}
}

// Len returns how many keys are locked or waited for.
func (l *LocalLocks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byKey)
}

// unref drops one reference to k, and k itself with the last.
func (l *LocalLocks) unref(key store.Key, k *localLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.refs--; k.refs == 0 {
		delete(l.byKey, key)
	}
}
