package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheck: an error a platform's files have, in code or in tests, is
// found for that platform and no other.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		// syscall.Kill is not Windows's.
		"p/p.go": "package p\n\nimport \"syscall\"\n\nvar Kill = syscall.Kill\n",
		// SOCK_NONBLOCK is Linux's, not macOS's; only a test uses it.
		"p/p_unix_test.go": "//go:build unix\n\npackage p\n\nimport \"syscall\"\n\nconst nonblock = syscall.SOCK_NONBLOCK\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GOWORK", "off")
	for _, c := range []struct {
		goos, goarch string
		want         []string // the files with an error
	}{
		{"linux", "amd64", nil},
		{"windows", "amd64", []string{"p.go"}},
		{"darwin", "arm64", []string{"p_unix_test.go"}},
	} {
		n, errs, err := check(dir, c.goos, c.goarch, "./...")
		if err != nil {
			t.Fatalf("%s: %v", c.goos, err)
		}
		if n == 0 {
			t.Fatalf("%s: no package loaded", c.goos)
		}
		var got []string
		for _, e := range errs {
			file, _, _ := strings.Cut(filepath.Base(e), ":")
			if !slices.Contains(got, file) {
				got = append(got, file)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s/%s: errors in %v, want %v: %q", c.goos, c.goarch, got, c.want, errs)
		}
	}
}
