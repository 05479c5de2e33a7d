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
		output      []string
	}{
		{"TestPass", "0", nil, []string{"hello from the browser"}},
		// Files and examples need the page's file system.
		{"TestFiles|Example", "0", nil, []string{"--- PASS: TestFiles", "--- PASS: Example"}},
		{"TestFail", "1", []string{"TestFail", "TestFail/Inner"}, []string{"failing on purpose"}},
		{"TestPanic", "2", []string{"TestPanic"}, []string{"panic: panicking on purpose"}},
	}
	for _, c := range cases {
		t.Run(c.run, func(t *testing.T) {
			var buf bytes.Buffer
			r := runWasm(t, "testdata/wasmtests", &buf, []string{"-test.run=^(" + c.run + ")$"})
			out := buf.String()
			if r.status != c.status {
				t.Fatalf("status %q (problem %q), want %q; output:\n%s", r.status, r.problem, c.status, out)
			}
			if c.failed != nil && strings.Join(r.out.failed(), ",") != strings.Join(c.failed, ",") {
				t.Errorf("failed tests %q, want %q", r.out.failed(), c.failed)
			}
			for _, want := range c.output {
				if !strings.Contains(out, "wasm: ") || !strings.Contains(out, want) {
					t.Errorf("the output must hold %q, each line prefixed with \"wasm: \"; got:\n%s", want, out)
				}
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
