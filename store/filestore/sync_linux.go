package filestore

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes what was written to f durable: fdatasync(2), which
// flushes the data and the metadata needed to read it back (the size), not
// the modification time.
func syncData(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return pathErr("fdatasync", f, err)
		}
	}
}
