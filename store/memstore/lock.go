package memstore

import (
	"context"
	"sync"

	"github.com/spool-go/spool/store"
)

// locks holds one lock per session key, made on first use and dropped when
// nobody holds or waits for it, so that the map does not grow with every
// session ever locked.
type locks struct {
	mu    sync.Mutex
	byKey map[store.Key]*keyLock
}

type keyLock struct {
	held chan struct{} // full while the lock is held
	refs int           // holders and waiters
}

func (l *locks) lock(ctx context.Context, key store.Key) (func(), error) {
	l.mu.Lock()
	if l.byKey == nil {
		l.byKey = map[store.Key]*keyLock{}
	}
	k := l.byKey[key]
	if k == nil {
		k = &keyLock{held: make(chan struct{}, 1)}
		l.byKey[key] = k
	}
	k.refs++
	l.mu.Unlock()

	select {
	case k.held <- struct{}{}:
	case <-ctx.Done():
		l.release(key, k)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-k.held
			l.release(key, k)
		})
	}, nil
}

// release drops one reference to k, and k itself with the last.
func (l *locks) release(key store.Key, k *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k.refs--
	if k.refs == 0 {
		delete(l.byKey, key)
	}
}
