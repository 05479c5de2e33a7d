//go:build js && wasm

// Package wasmtests holds tests that browsertest's own tests run in
// Chromium, to check that RunWasm reports passes, failures and panics.
package wasmtests

import (
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
