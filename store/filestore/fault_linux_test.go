//go:build linux

package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/store"
)

// tinyDisk mounts a tmpfs of 256 KiB at a new folder and returns it. Where
// mounting is not allowed the test is skipped, except under CI=true as
// root, where it should be.
func tinyDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
		if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
			t.Fatalf("mounting a tmpfs as root under CI: %v", err)
		}
		t.Skipf("cannot mount a tmpfs here (%v): the full-disk and read-only cases need one (run as root)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

func remount(t *testing.T, dir string, flags uintptr, data string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|flags, data); err != nil {
		t.Fatalf("remounting %s (%s): %v", dir, data, err)
	}
}

// TestFaultFullDisk: a turn on a full disk fails with ENOSPC, the
// transcript keeps every earlier entry and no part of a line, and once the
// disk grows the next turn works.
func TestFaultFullDisk(t *testing.T) {
	disk := tinyDisk(t)
	runFault(t, filepath.Join(disk, "spool"), faultCase{
		brk: func(t *testing.T, a *spool.Agent) *spool.Agent {
			fill(t, filepath.Join(disk, "filler"))
			return a
		},
		fix:  func(t *testing.T) { remount(t, disk, 0, "size=2m") },
		want: syscall.ENOSPC,
	})
}

// fill writes path until the disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestFaultReadOnly: a turn in a folder that became read-only fails with
// EROFS, changing nothing, and works once the folder is writable again.
// Root ignores file modes, so the folder is a tmpfs remounted read-only;
// Linux allows that only with no file open for writing, so the agent that
// wrote the first turns is closed and another carries on, as a program
// started on a read-only folder would.
func TestFaultReadOnly(t *testing.T) {
	disk := tinyDisk(t)
	root := filepath.Join(disk, "spool")
	runFault(t, root, faultCase{
		brk: func(t *testing.T, a *spool.Agent) *spool.Agent {
			a.Close()
			store.Close(a.Store())
			remount(t, disk, syscall.MS_RDONLY, "size=256k")
			return newFaultAgent(t, root)
		},
		fix:  func(t *testing.T) { remount(t, disk, 0, "size=256k") },
		want: syscall.EROFS,
	})
}
