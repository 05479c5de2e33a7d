package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/spooltest"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkSessionsLsVsNaive runs `spool sessions ls --limit 50 --json` on
// a file store of 10,000 sessions of 2 entries, as a process, against the
// naive list as a process (this test binary reading every transcript),
// with the page cache warm, in interleaved rounds (issue 12's ninth row).
// Run it with -benchtime 1x.
func BenchmarkSessionsLsVsNaive(b *testing.B) {
	bin := spooltest.Binary(b)
	root := b.TempDir()
	set := benchdata.List
	dir := filepath.Join(root, set.Namespace.Agent)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for j, key := range set.Keys() {
		var buf []byte
		for _, e := range set.Entries(j) {
			buf, _ = transcript.AppendLine(buf, e)
		}
		if err := os.WriteFile(filepath.Join(dir, key.ID+".jsonl"), buf, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	ls := func() benchdata.Phase {
		return benchdata.Measure(func() int {
			cmd := exec.Command(bin, "sessions", "ls", "--store", "file:"+root, "--agent", set.Namespace.Agent, "--limit", "50", "--json")
			out, err := cmd.Output()
			if err != nil || !strings.Contains(string(out), `"sessions"`) {
				b.Fatalf("spool sessions ls: %v %s", err, out)
			}
			return 1
		})
	}
	naive := func() benchdata.Phase {
		return benchdata.Measure(func() int {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "SPOOL_TEST_NAIVE_LIST="+dir)
			out, err := cmd.Output()
			if err != nil || !strings.Contains(string(out), `"sessions"`) {
				b.Fatalf("naive list: %v %s", err, out)
			}
			return 1
		})
	}
	ls() // builds the index, as the first listing after a crash or an upgrade does
	naive()
	var l, n []benchdata.Phase
	for b.Loop() {
		l, n = benchdata.AB(7, ls, naive)
	}
	ms := func(p benchdata.Phase) float64 { return float64(p.Wall.Microseconds()) / 1e3 }
	b.ReportMetric(benchdata.Medians(l, ms), "ls-ms")
	b.ReportMetric(benchdata.Medians(n, ms), "naive-ms")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(n, l, ms)), "naive/ls")
}

// naiveList is the naive lister as a process: it reads and decodes every
// transcript in dir, sorts them newest first and prints the first page as
// spool sessions ls --json does.
func naiveList(dir string, stdout io.Writer) int {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	infos := make([]store.SessionInfo, 0, len(names))
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		key := store.Key{Agent: filepath.Base(dir), ID: strings.TrimSuffix(filepath.Base(name), ".jsonl")}
		var info store.SessionInfo
		dec := transcript.NewDecoder(f)
		for {
			e, err := dec.Decode()
			if err == io.EOF {
				break
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			info.Apply(key, e)
		}
		f.Close()
		infos = append(infos, info)
	}
	storekit.SortSessions(infos)
	json.NewEncoder(stdout).Encode(store.SessionPage{Sessions: infos[:min(50, len(infos))]})
	return 0
}
