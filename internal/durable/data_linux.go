package durable

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// SyncData makes what was written to f durable, and the size that reads it
// back: fdatasync(2), which leaves out the modification time (see the
// package doc). It calls it on f.Fd, which leaves the descriptor of a
// regular file as it is, rather than through f.SyscallConn, whose Control
// costs a closure and the descriptor's reference counting on every sync.
func SyncData(f *os.File) error {
	fd := int(f.Fd())
	var err error
	for {
		if err = unix.Fdatasync(fd); err != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(f)
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
