package filestore

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncData makes what was written to f durable: fdatasync(2), which
// flushes the data and the metadata needed to read it back (the size), not
// the modification time.
func syncData(f *os.File) error {
	return withFd(f, "fdatasync", func(fd int) error {
		for {
			if err := unix.Fdatasync(fd); err != unix.EINTR {
				return err
			}
		}
	})
}
