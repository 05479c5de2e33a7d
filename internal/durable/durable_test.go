package durable_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/spool-go/spool/internal/durable"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	for _, content := range []string{"first\n", "second, longer than the first\n", ""} {
		if err := durable.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatalf("WriteFile(%q): %v", content, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("after WriteFile(%q) the file holds %q (%v)", content, got, err)
		}
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
		if err := durable.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("WriteFile with mode 0644 left mode %v", fi.Mode().Perm())
		}
	}
	assertOnly(t, dir, "key")
}

// TestWriteFileFailureKeepsTheOld: when the rename cannot happen (here the
// path is a folder with something in it), the old content stays and no
// temporary file is left.
func TestWriteFileFailureKeepsTheOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFile(path, []byte("new"), 0o600); err == nil {
		t.Fatal("WriteFile over a non-empty folder succeeded")
	}
	if fi, err := os.Stat(filepath.Join(path, "inside")); err != nil || !fi.IsDir() {
		t.Fatalf("the folder in the way was changed: %v", err)
	}
	assertOnly(t, dir, "taken")
	if err := durable.WriteFile(filepath.Join(dir, "no", "such", "folder"), nil, 0o600); err == nil {
		t.Error("WriteFile into a missing folder succeeded")
	}
}

func TestSyncs(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("bytes"); err != nil {
		t.Fatal(err)
	}
	if err := durable.SyncData(f); err != nil {
		t.Errorf("SyncData: %v", err)
	}
	if err := durable.Sync(f); err != nil {
		t.Errorf("Sync: %v", err)
	}
	if err := durable.SyncDir(dir); err != nil {
		t.Errorf("SyncDir: %v", err)
	}
	if runtime.GOOS != "windows" {
		if err := durable.SyncDir(filepath.Join(dir, "missing")); err == nil {
			t.Error("SyncDir of a missing folder succeeded")
		}
	}
	f.Close()
	if err := durable.SyncData(f); err == nil {
		t.Error("SyncData of a closed file succeeded")
	}
}

// assertOnly fails unless dir holds exactly the names given.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("%s holds %v, want %v (a temporary file left behind?)", dir, got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("%s holds %v, want %v", dir, got, names)
		}
	}
}
