// Command testreport reads the events of go test -json on stdin and
// writes what plain go test writes (each package's ok or FAIL line, the
// output of the tests that failed), then a summary: one line per skipped
// test with its reason, so that a skip is never silent, and the totals.
// scripts/test runs it:
//
//	go test -race -json ./... | go run ./internal/testreport
//
// It exits 1 when a test or a package failed, when the input ends before
// a package does, and, with CI=true, when a test skipped for want of a
// service (its reason names a SPOOL_TEST_ variable): in CI every service
// is there, so such a skip means a test did not run.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// skip is one skipped test.
type skip struct {
	pkg, test, reason string
}

// report keeps what the summary needs while events stream through.
type report struct {
	out     io.Writer
	pending map[string][]string // output of running tests, by package and test
	skips   []skip
	counts  map[string]int // pass, fail, skip
	failed  bool           // a package or a test failed
	open    map[string]bool
}

func main() {
	r := &report{out: os.Stdout, pending: map[string][]string{}, counts: map[string]int{}, open: map[string]bool{}}
	if err := r.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if r.summary(os.Getenv("CI") == "true") {
		os.Exit(1)
	}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (a build error, go vet's output): as it is.
			fmt.Fprintf(r.out, "%s\n", line)
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	key := e.Package + " " + e.Test
	switch e.Action {
	case "build-output":
		// The compiler's messages about a package that does not build.
		io.WriteString(r.out, e.Output)
	case "build-fail":
		r.failed = true
	case "start":
		r.open[e.Package] = true
	case "output":
		if e.Test == "" {
			// The package's own lines: ok, FAIL, panics outside a test.
			if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" && e.Output != "FAIL\n" {
				io.WriteString(r.out, e.Output)
			}
			return
		}
		r.pending[key] = append(r.pending[key], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			delete(r.open, e.Package)
			if e.Action == "fail" {
				r.failed = true
				r.unfinished(e.Package)
			}
			return
		}
		r.counts[e.Action]++
		switch e.Action {
		case "fail":
			r.failed = true
			for _, o := range r.pending[key] {
				if !strings.HasPrefix(o, "=== ") {
					io.WriteString(r.out, o)
				}
			}
		case "skip":
			r.skips = append(r.skips, skip{pkg: e.Package, test: e.Test, reason: skipReason(r.pending[key])})
		}
		delete(r.pending, key)
	}
}

// unfinished writes the output of pkg's tests that never ended, in name
// order: a package killed, timed out or crashed while they ran (the
// timeout's "running tests" list, a panic's or a SIGQUIT's goroutines
// are theirs), whose output would otherwise be lost with them.
func (r *report) unfinished(pkg string) {
	var keys []string
	for key := range r.pending {
		if strings.HasPrefix(key, pkg+" ") {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		fmt.Fprintf(r.out, "--- UNFINISHED: %s (running when the package failed)\n", strings.TrimPrefix(key, pkg+" "))
		for _, o := range r.pending[key] {
			if !strings.HasPrefix(o, "=== ") {
				io.WriteString(r.out, o)
			}
		}
		delete(r.pending, key)
	}
}

// messageRE is a line a test logged: "    file_test.go:12: text".
var messageRE = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: (.*)$`)

// skipReason is the first message a skipped test logged.
func skipReason(output []string) string {
	for _, o := range output {
		if m := messageRE.FindStringSubmatch(strings.TrimRight(o, "\n")); m != nil {
			return m[1]
		}
	}
	return "(no reason given)"
}

// summary prints the skips and the totals, and reports whether the run
// failed.
func (r *report) summary(ci bool) bool {
	failed := r.failed
	if len(r.open) > 0 {
		var pkgs []string
		for p := range r.open {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		fmt.Fprintf(r.out, "\nthe test output ended before these packages did: %s\n", strings.Join(pkgs, ", "))
		failed = true
	}
	if len(r.skips) > 0 {
		sort.Slice(r.skips, func(i, j int) bool {
			if r.skips[i].pkg != r.skips[j].pkg {
				return r.skips[i].pkg < r.skips[j].pkg
			}
			return r.skips[i].test < r.skips[j].test
		})
		fmt.Fprintf(r.out, "\nskipped (%d):\n", len(r.skips))
		for _, s := range r.skips {
			fmt.Fprintf(r.out, "  %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/spool-go/spool/"), s.test, s.reason)
		}
		if ci {
			for _, s := range r.skips {
				if strings.Contains(s.reason, "SPOOL_TEST_") {
					fmt.Fprintf(r.out, "\nCI=true and %s %s skipped for want of a service: every service must be there in CI\n", s.pkg, s.test)
					failed = true
					break
				}
			}
		}
	}
	fmt.Fprintf(r.out, "\n%d passed, %d failed, %d skipped\n", r.counts["pass"], r.counts["fail"], r.counts["skip"])
	return failed
}
