//go:build !linux

package filestore

import "os"

// syncData makes what was written to f durable. os.File.Sync is
// fcntl(F_FULLFSYNC) on macOS (plain fsync there leaves data in the
// drive's cache), FlushFileBuffers on Windows and fsync elsewhere.
func syncData(f *os.File) error {
	return f.Sync()
}
