//go:build !linux

package sqlitestore

import "os"

func fdatasync(f *os.File) error { return f.Sync() }
