package filestore

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// platformErr is why the store cannot run here; nil where it can.
var platformErr error

// openFile opens like os.OpenFile but shares the file for deletion too, as
// files are shared on Unix: a reader or a waiting writer in another process
// must not stop Delete or a rename of the index. Only the flags the store
// uses are supported: O_RDONLY, O_RDWR, O_CREATE, O_EXCL and O_APPEND.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	access := uint32(windows.GENERIC_READ)
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if flag&os.O_APPEND != 0 {
			// Append-only access makes every write land at the end.
			access |= windows.FILE_APPEND_DATA | windows.FILE_WRITE_ATTRIBUTES | windows.STANDARD_RIGHTS_WRITE | windows.SYNCHRONIZE
		} else {
			access |= windows.GENERIC_WRITE
		}
	}
	create := uint32(windows.OPEN_EXISTING)
	switch {
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		create = windows.CREATE_NEW
	case flag&os.O_CREATE != 0:
		create = windows.OPEN_ALWAYS
	}
	share := uint32(windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE)
	h, err := windows.CreateFile(p, access, share, nil, create, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// Windows byte-range locks are mandatory: a locked range cannot be read or
// written through another handle. The lock therefore covers one byte far
// past the end of any transcript, which only other lockers ever touch.
const lockOffsetHigh = 0x7fffffff

func lockFile(f *os.File, exclusive bool) error {
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return pathErr("LockFileEx", f, windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol))
}

func tryLockFile(f *os.File, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol)
	if err == windows.ERROR_LOCK_VIOLATION || err == windows.ERROR_IO_PENDING {
		return false, nil
	}
	return err == nil, pathErr("LockFileEx", f, err)
}

// unlockAndClose unlocks and closes f. Windows releases the locks of a closed
// handle only when it gets round to it, so unlock first.
func unlockAndClose(f *os.File) error {
	unlockFile(f)
	return f.Close()
}

func unlockFile(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return pathErr("UnlockFileEx", f, windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol))
}

// unlinked reports whether the file that st (from f.Stat) describes is no
// longer the one at path: deleted (or waiting to be), or replaced.
func unlinked(st fs.FileInfo, path string) bool {
	now, err := os.Stat(path)
	return err != nil || !os.SameFile(st, now)
}

// fileID is 0 on Windows, where a FileInfo from a directory listing has no
// file index; size and mtime alone tell a changed transcript.
func fileID(st fs.FileInfo) uint64 { return 0 }

// statEach stats each name in the folder dir without following symlinks,
// and calls fn with what it found; a name that vanished is skipped.
func statEach(dir *os.File, names []string, fn func(i int, st fileState, regular bool)) error {
	return statEachByPath(dir, names, fn)
}

func pathErr(op string, f *os.File, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: f.Name(), Err: err}
}

// keepHandles: no transcript stays open between appends (handles.go): a
// deleted file keeps its name while a handle holds it, so another
// process could not make the session again.
const keepHandles = false
