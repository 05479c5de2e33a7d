//go:build !js

package idbstore_test

import (
	"flag"
	"testing"

	"github.com/spool-go/spool/internal/browsertest"
)

var wasmRun = flag.String("wasm.run", "", "run only the browser tests matching this pattern (-test.run of the wasm binary)")

// TestInBrowser runs this package's tests, which need IndexedDB, in
// headless Chromium: the storetest conformance suite and the idbstore
// tests of the *_test.go files built for js/wasm.
func TestInBrowser(t *testing.T) {
	var args []string
	if *wasmRun != "" {
		args = append(args, "-test.run="+*wasmRun)
	}
	browsertest.RunWasm(t, ".", args...)
}
