//go:build js && wasm

// Package wasmtests holds tests that browsertest's own tests run in
// Chromium, to check that RunWasm reports passes, failures and panics.
package wasmtests

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall/js"
	"testing"
)

func TestPass(t *testing.T) {
	if js.Global().Get("indexedDB").IsUndefined() {
		t.Fatal("no indexedDB: this does not run in a browser")
	}
	t.Log("hello from the browser")
}

func TestFail(t *testing.T) {
	t.Run("Inner", func(t *testing.T) { t.Error("failing on purpose") })
}

func TestPanic(t *testing.T) {
	panic("panicking on purpose")
}

func TestFiles(t *testing.T) {
	f, err := os.CreateTemp("", "browsertest-*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("hello, file"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "file" {
		t.Fatalf("read back %q, %v; want \"file\"", b, err)
	}
	f.Close()
	if _, err := os.OpenFile(f.Name(), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on an existing file: %v, want fs.ErrExist", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after Remove: %v, want fs.ErrNotExist", err)
	}
}

func Example() {
	fmt.Println("an example's output, checked in the browser")
	// Output: an example's output, checked in the browser
}
