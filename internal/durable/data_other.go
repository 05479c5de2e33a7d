//go:build !linux

package durable

import "os"

// SyncData makes what was written to f durable, and the size that reads it
// back (see the package doc): os.File.Sync, which is fcntl(F_FULLFSYNC) on
// macOS, FlushFileBuffers on Windows and fsync(2) elsewhere.
func SyncData(f *os.File) error { return f.Sync() }
