//go:build !js

package idbstore_test

import (
	"flag"
	"testing"

	"github.com/spool-go/spool/internal/browsertest"
)

var (
	wasmRun       = flag.String("wasm.run", "", "run only the browser tests matching this pattern (-test.run of the wasm binary)")
	wasmBench     = flag.String("wasm.bench", "", "run the browser benchmarks matching this pattern (-test.bench of the wasm binary), and no tests unless -wasm.run is set")
	wasmBenchtime = flag.String("wasm.benchtime", "", "-test.benchtime of the wasm binary")
)

// TestInBrowser runs this package's tests, which need IndexedDB, in
// headless Chromium: the storetest conformance suite and the idbstore
// tests of the *_test.go files built for js/wasm.
func TestInBrowser(t *testing.T) {
	var args []string
	switch {
	case *wasmRun != "":
		args = append(args, "-test.run="+*wasmRun)
	case *wasmBench != "":
		args = append(args, "-test.run=^$")
	}
	if *wasmBench != "" {
		args = append(args, "-test.bench="+*wasmBench)
	}
	if *wasmBenchtime != "" {
		args = append(args, "-test.benchtime="+*wasmBenchtime)
	}
	browsertest.RunWasm(t, ".", args...)
}
