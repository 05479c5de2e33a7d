//go:build unix

package filestore

import (
	"path/filepath"
	"testing"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/internal/sockbus/sockbustest"
)

// Two Stores on one root are two processes: their messages go through
// the sockets in <root>/+live, which listing ignores.
func TestNotifyAcrossStores(t *testing.T) {
	root := t.TempDir()
	one, two := open(t, root), open(t, root)
	sockbustest.AcrossStores(t, one, two, open(t, t.TempDir()), filepath.Join(root, liveDir))
	if ns, err := two.Namespaces(t.Context()); err != nil || len(ns) != 0 {
		t.Fatalf("Namespaces with the socket folder: %v %v", ns, err)
	}
	two.Close()
	if _, err := two.Listen(t.Context(), store.Key{Agent: "a", ID: "s"}); err != ErrClosed {
		t.Fatalf("Listen after Close: %v", err)
	}
}

func TestNotifyAcrossProcesses(t *testing.T) {
	sockbustest.AcrossProcesses(t, "TestNotifyAcrossProcesses", t.TempDir(), func(t *testing.T, root string) store.Notifier { return open(t, root) })
}
