//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package flock

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = unix.Flock(int(fd), how); ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

func lock(f *os.File) error {
	if err := flock(f, unix.LOCK_EX); err != nil {
		return fmt.Errorf("flock: %s: %w", f.Name(), err)
	}
	return nil
}

func tryLock(f *os.File) (bool, error) {
	switch err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err {
	case nil:
		return true, nil
	case unix.EWOULDBLOCK:
		return false, nil
	default:
		return false, fmt.Errorf("flock: %s: %w", f.Name(), err)
	}
}

func unlock(f *os.File) { flock(f, unix.LOCK_UN) }

// removed reports whether f no longer has a name: the lock file was
// removed (and maybe made again) since f was opened.
func removed(f *os.File, path string) bool {
	st, err := f.Stat()
	if err != nil {
		return true
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Nlink == 0
}

// release removes the file while it is still held, so that a waiter that
// gets it next sees it removed, then unlocks and closes it.
func release(f *os.File, path string) {
	os.Remove(path)
	unlock(f)
	f.Close()
}
