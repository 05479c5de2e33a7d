// Package flock holds a lock across processes on one machine: an exclusive
// OS file lock (flock on Unix, LockFileEx on Windows) on a file of its own,
// which the OS releases when the holder's process dies, so a crashed
// process never leaves a lock behind. Stores use it for their turn locks
// (store.Locker).
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrUnsupported: this platform has no file locks.
var ErrUnsupported = errors.New("flock: file locks are not supported on this platform")

// The waits between attempts while the lock is held elsewhere: short at
// first, since most turn locks are released soon, growing to a bound so
// that a long wait costs little and still notices the release soon after.
const (
	minPoll = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// Lock takes the exclusive lock of path, creating the file (mode 0600)
// when it is missing, and waits until it is free or ctx is done. A wait
// that ctx can end polls the non-blocking lock, so an abandoned wait
// leaves no goroutine or open file behind. The returned function releases
// the lock and removes the file, unless another waiter has it open (the
// next holder then finds its file removed and locks a new one); it is safe
// to call more than once.
func Lock(ctx context.Context, path string) (func(), error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("flock: %w", err)
		}
		if err := wait(ctx, f); err != nil {
			f.Close()
			return nil, err
		}
		if removed(f, path) {
			// The holder before us removed the file as we waited on it: a
			// lock on it excludes nobody. Lock the one at path now.
			unlock(f)
			f.Close()
			continue
		}
		var once sync.Once
		return func() {
			once.Do(func() {
				release(f, path)
			})
		}, nil
	}
}

// wait takes the lock on f, polling until ctx is done.
func wait(ctx context.Context, f *os.File) error {
	ok, err := tryLock(f)
	if err != nil || ok {
		return err
	}
	if ctx.Done() == nil {
		return lock(f)
	}
	delay := minPoll
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok, err := tryLock(f); err != nil || ok {
			return err
		}
		delay = min(2*delay, maxPoll)
		t.Reset(delay)
	}
}
