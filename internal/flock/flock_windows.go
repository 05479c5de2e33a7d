package flock

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

func lock(f *os.File) error {
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		return fmt.Errorf("flock: %s: %w", f.Name(), err)
	}
	return nil
}

func tryLock(f *os.File) (bool, error) {
	ol := new(windows.Overlapped)
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch err {
	case nil:
		return true, nil
	case windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING:
		return false, nil
	}
	return false, fmt.Errorf("flock: %s: %w", f.Name(), err)
}

func unlock(f *os.File) {
	ol := new(windows.Overlapped)
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}

// removed is false: a file another handle holds open is not removed on
// Windows, and release leaves lock files in place.
func removed(f *os.File, path string) bool { return false }

// release unlocks before closing: Windows drops a closed handle's locks
// only when it gets round to it.
func release(f *os.File, path string) {
	unlock(f)
	f.Close()
}
