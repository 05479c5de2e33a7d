//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filestore

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// platformErr is why the store cannot run here; nil where it can.
var platformErr error

// openFile is os.OpenFile without its attempt to add a regular file to the
// network poller, which costs four fcntl and an epoll_ctl on every open
// (several per append).
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
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
	return flock(f, how)
}

// flock is flock(2) on f's descriptor, again when interrupted. It uses
// f.Fd, which leaves a regular file's descriptor as it is (see statOpen):
// no closure and no reference counting of the descriptor, as
// f.SyscallConn's Control has, on a call every append makes twice.
func flock(f *os.File, how int) error {
	fd := int(f.Fd())
	var err error
	for {
		if err = unix.Flock(fd, how); err != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(f)
	return pathErr("flock", f, err)
}

// withFd runs fn on f's descriptor. Unlike f.Fd, it leaves the file's
// blocking mode alone, which saves two fcntl calls every time on a file
// that is not regular (a folder).
func withFd(f *os.File, op string, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return pathErr(op, f, err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return pathErr(op, f, err)
	}
	return pathErr(op, f, ferr)
}

// tryLockFile is lockFile that gives up at once when the lock is held.
func tryLockFile(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	err := flock(f, how)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// unlockAndClose closes f, which releases its lock: the lock belongs to the
// open file, and this is its only descriptor.
func unlockAndClose(f *os.File) error { return f.Close() }

func unlockFile(f *os.File) error { return flock(f, unix.LOCK_UN) }

// unlinked reports whether the file that st (from f.Stat) describes no
// longer has a name: it was deleted, or another file was renamed over it.
func unlinked(st fs.FileInfo, path string) bool {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Nlink == 0
	}
	return false
}

// statOpen returns the state of the open file f, whether it has no name
// left (see unlinked; path is not used here, where the link count tells),
// and its permission bits, from one fstat.
// Unlike f.Stat it makes no FileInfo: every append stats its transcript
// once or twice, and each allocation there is memory the append touches
// cold after its sync when other programs share the CPUs. f.Fd leaves a
// regular file's descriptor as it is (it changes only a non-blocking one,
// which openFile never makes).
func statOpen(f *os.File, _ string) (st fileState, gone bool, perm fs.FileMode, err error) {
	var sys unix.Stat_t
	fd := int(f.Fd())
	for {
		if err = unix.Fstat(fd, &sys); err != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(f)
	if err != nil {
		return fileState{}, false, 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	st = fileState{size: sys.Size, mtime: sys.Mtim.Nano(), ino: uint64(sys.Ino)}
	return st, sys.Nlink == 0, fs.FileMode(sys.Mode) & fs.ModePerm, nil
}

// fileID returns the inode number st describes.
func fileID(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}

// statEach stats each name in the open folder dir, without following
// symlinks, and calls fn with what it found; a name that vanished is
// skipped. Stating relative to the folder spares the kernel walking the
// whole path each time, a third of the cost of listing a cold index.
func statEach(dir *os.File, names []string, fn func(i int, st fileState, regular bool)) error {
	return withFd(dir, "fstatat", func(fd int) error {
		for i, name := range names {
			var st unix.Stat_t
			err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			for err == unix.EINTR {
				err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			}
			if err == unix.ENOENT {
				continue
			}
			if err != nil {
				return err
			}
			fn(i, fileState{size: st.Size, mtime: st.Mtim.Nano(), ino: uint64(st.Ino)}, uint32(st.Mode)&unix.S_IFMT == unix.S_IFREG)
		}
		return nil
	})
}

func pathErr(op string, f *os.File, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

// keepHandles: transcripts stay open between appends (handles.go); a file
// deleted or replaced meanwhile is noticed by its link count.
const keepHandles = true
