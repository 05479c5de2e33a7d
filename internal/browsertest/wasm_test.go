package browsertest

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunWasm checks that a run reports what the binary did: a pass, a
// failure with the failed tests' names, and a panic, each with the output.
func TestRunWasm(t *testing.T) {
	cases := []struct {
		run, status string
		failed      []string
		output      string
	}{
		{"TestPass", "0", nil, "hello from the browser"},
		{"TestFail", "1", []string{"TestFail", "TestFail/Inner"}, "failing on purpose"},
		{"TestPanic", "2", []string{"TestPanic"}, "panic: panicking on purpose"},
	}
	for _, c := range cases {
		t.Run(c.run, func(t *testing.T) {
			var buf bytes.Buffer
			r := runWasm(t, "testdata/wasmtests", &buf, []string{"-test.run=^" + c.run + "$"})
			out := buf.String()
			if r.status != c.status {
				t.Fatalf("status %q (problem %q), want %q; output:\n%s", r.status, r.problem, c.status, out)
			}
			if c.failed != nil && strings.Join(r.out.failed(), ",") != strings.Join(c.failed, ",") {
				t.Errorf("failed tests %q, want %q", r.out.failed(), c.failed)
			}
			if !strings.Contains(out, "wasm: ") || !strings.Contains(out, c.output) {
				t.Errorf("the output must hold %q, each line prefixed with \"wasm: \"; got:\n%s", c.output, out)
			}
		})
	}
}

func TestWasmGoFlags(t *testing.T) {
	got := wasmGoFlags("-race -mod=mod -cover -coverpkg=./... --race -tags=x -trimpath")
	if got != "-mod=mod -tags=x -trimpath" {
		t.Errorf("wasmGoFlags: %q", got)
	}
}
