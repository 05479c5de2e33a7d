//go:build !linux

package benchdata

import "os"

// SyncData is the floor a durable append is measured against: fdatasync
// on Linux, as the file store does, and File.Sync elsewhere.
func SyncData(f *os.File) error { return f.Sync() }
