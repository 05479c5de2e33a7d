package main

import (
	"bytes"
	"strings"
	"testing"
)

const stream = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestOK"}
{"Action":"run","Package":"example.com/a","Test":"TestCluster"}
{"Action":"output","Package":"example.com/a","Test":"TestCluster","Output":"    cluster_test.go:29: SPOOL_TEST_REDIS_CLUSTER is not set; skipping\n"}
{"Action":"output","Package":"example.com/a","Test":"TestCluster","Output":"--- SKIP: TestCluster (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestCluster"}
{"Action":"run","Package":"example.com/a","Test":"TestBad"}
{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"    bad_test.go:3: it broke\n"}
{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestBad"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t0.01s\n"}
{"Action":"fail","Package":"example.com/a"}
`

func run(t *testing.T, in string, ci bool) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	r := &report{out: &out, pending: map[string][]string{}, counts: map[string]int{}, open: map[string]bool{}}
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	failed := r.summary(ci)
	return out.String(), failed
}

func TestReport(t *testing.T) {
	out, failed := run(t, stream, false)
	if !failed {
		t.Error("a failed test did not fail the report")
	}
	for _, want := range []string{
		"    bad_test.go:3: it broke\n--- FAIL: TestBad",
		"FAIL\texample.com/a\t0.01s\n",
		"skipped (1):\n  example.com/a TestCluster: SPOOL_TEST_REDIS_CLUSTER is not set; skipping\n",
		"1 passed, 1 failed, 1 skipped\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=== RUN") || strings.Contains(out, "TestOK") {
		t.Errorf("a passing test's output is in the report:\n%s", out)
	}
}

// With CI=true a test skipped for want of a service fails the run, even
// when every test passed.
func TestReportServiceSkipFailsInCI(t *testing.T) {
	in := strings.ReplaceAll(stream, `"fail"`, `"pass"`)
	if _, failed := run(t, in, false); failed {
		t.Fatal("failed without CI")
	}
	out, failed := run(t, in, true)
	if !failed || !strings.Contains(out, "skipped for want of a service") {
		t.Fatalf("CI=true: failed=%v\n%s", failed, out)
	}
}

// A stream that stops before its package ends (go test killed) fails.
func TestReportTruncated(t *testing.T) {
	in := stream[:strings.Index(stream, `{"Action":"output","Package":"example.com/a","Output"`)]
	in = strings.ReplaceAll(in, `"fail"`, `"pass"`)
	if out, failed := run(t, in, false); !failed || !strings.Contains(out, "ended before") {
		t.Fatalf("truncated: failed=%v\n%s", failed, out)
	}
}

// A package that does not build shows the compiler's message and fails.
func TestReportBuildFailure(t *testing.T) {
	in := `{"ImportPath":"example.com/b [example.com/b.test]","Action":"build-output","Output":"b/x_test.go:3:1: syntax error\n"}
{"ImportPath":"example.com/b [example.com/b.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/b"}
{"Action":"output","Package":"example.com/b","Output":"FAIL\texample.com/b [build failed]\n"}
{"Action":"fail","Package":"example.com/b"}
`
	out, failed := run(t, in, false)
	if !failed || !strings.Contains(out, "syntax error") || !strings.Contains(out, "[build failed]") {
		t.Fatalf("failed=%v\n%s", failed, out)
	}
}

// A package that fails while a test runs (killed, timed out, a panic in
// another goroutine) shows what that test printed: the goroutines of a
// timeout or a SIGQUIT are its output, and were lost with it.
func TestReportUnfinishedTest(t *testing.T) {
	in := `{"Action":"start","Package":"example.com/c"}
{"Action":"run","Package":"example.com/c","Test":"TestHangs"}
{"Action":"output","Package":"example.com/c","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}
{"Action":"output","Package":"example.com/c","Test":"TestHangs","Output":"SIGQUIT: quit\n"}
{"Action":"output","Package":"example.com/c","Test":"TestHangs","Output":"goroutine 7 [chan receive]:\n"}
{"Action":"output","Package":"example.com/c","Output":"FAIL\texample.com/c\t1134.270s\n"}
{"Action":"fail","Package":"example.com/c"}
`
	out, failed := run(t, in, false)
	if !failed || !strings.Contains(out, "--- UNFINISHED: TestHangs") || !strings.Contains(out, "goroutine 7 [chan receive]") {
		t.Fatalf("failed=%v\n%s", failed, out)
	}
}
