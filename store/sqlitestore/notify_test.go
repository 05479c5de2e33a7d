//go:build unix

package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/sockbus/sockbustest"
)

// Two Stores on one file are two processes: their messages go through
// the sockets in <file>-live.
func TestNotifyAcrossStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	one, two := openAt(t, path), openAt(t, path)
	sockbustest.AcrossStores(t, one, two, openTest(t), path+"-live")
	two.Close()
	if _, err := two.Listen(t.Context(), store.Key{Agent: "a", ID: "s"}); err != errClosed {
		t.Fatalf("Listen after Close: %v", err)
	}
}

func TestNotifyAcrossProcesses(t *testing.T) {
	sockbustest.AcrossProcesses(t, "TestNotifyAcrossProcesses", filepath.Join(t.TempDir(), "spool.db"), func(t *testing.T, path string) store.Notifier { return openAt(t, path) })
}
