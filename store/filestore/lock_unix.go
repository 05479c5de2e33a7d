//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filestore

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// platformErr is why the store cannot run here; nil where it can.
var platformErr error

func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// lockFile takes flock(2) on f, shared or exclusive, waiting as long as it
// takes. flock locks belong to the open file, so two opens of one file
// exclude each other even within a process, and the kernel drops the lock
// when the process dies.
func lockFile(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return pathErr("flock", f, err)
		}
	}
}

// tryLockFile is lockFile that gives up at once when the lock is held.
func tryLockFile(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch err {
		case nil:
			return true, nil
		case unix.EWOULDBLOCK:
			return false, nil
		case unix.EINTR:
			continue
		}
		return false, pathErr("flock", f, err)
	}
}

func unlockFile(f *os.File) error {
	return pathErr("flock", f, unix.Flock(int(f.Fd()), unix.LOCK_UN))
}

// unlinked reports whether the file that st (from f.Stat) describes no
// longer has a name: it was deleted, or another file was renamed over it.
func unlinked(st fs.FileInfo, path string) bool {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Nlink == 0
	}
	return false
}

// syncDir makes the names in dir durable: created, renamed and removed
// files.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func pathErr(op string, f *os.File, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}
