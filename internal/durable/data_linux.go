package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncData makes what was written to f durable, and the size that reads it
// back: fdatasync(2), which leaves out the modification time (see the
// package doc).
func SyncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Fdatasync(int(fd)); serr != unix.EINTR {
				return
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
