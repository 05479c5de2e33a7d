package benchdata

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncData is the floor a durable append is measured against: fdatasync
// on Linux, as the file store does, and File.Sync elsewhere.
func SyncData(f *os.File) error {
	for {
		if err := unix.Fdatasync(int(f.Fd())); err != unix.EINTR {
			return err
		}
	}
}
