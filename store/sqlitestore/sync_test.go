package sqlitestore

import (
	"runtime"
	"testing"

	"modernc.org/sqlite"
)

// TestNewCommitsWithFdatasync: once a Store is open, the library commits
// with fdatasync where it can (see commitWithFdatasync), as SQLite built
// for these systems does.
func TestNewCommitsWithFdatasync(t *testing.T) {
	openTest(t)
	switch runtime.GOOS {
	case "linux", "freebsd", "netbsd", "illumos":
		if !sqlite.FdatasyncEnabled() {
			t.Fatal("a Store is open and modernc.org/sqlite still commits with fsync")
		}
	}
}
