// Command benchsuite measures every figure of issue 12 ("Turns at the
// store's floor") on this machine and prints them as one table: each row
// measured side by side with its anchor in one run (rounds interleaved,
// medians), with the ratio and whether it meets its goal. scripts/bench
// runs it; BENCHMARKS.md shows its latest output.
//
// Each row is a go test benchmark of the package it measures, run with
// -benchtime 1x or a fixed count (the benchmarks do their own interleaved
// rounds), so a row can be rerun alone:
//
//	go run ./internal/benchsuite -rows 'file'
//
// Rows that need PostgreSQL or Redis use SPOOL_TEST_POSTGRES and
// SPOOL_TEST_REDIS (scripts/bench sets the local defaults); the Mastra row
// needs Node.js and npm.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A row is one figure of the table.
type row struct {
	name   string // short name, for -rows
	figure string // what is measured, as the issue says it
	anchor string // what it is measured against
	today  string // the figure before the work
	goal   string

	pkg, bench, benchtime string
	// value picks the row's figure from the benchmark's metrics (keyed
	// "sub-benchmark/unit"), says it, and says whether it meets the goal.
	value func(m metrics) (shown string, met bool)
}

type metrics map[string]float64

func (m metrics) get(key string) (float64, bool) {
	v, ok := m[key]
	return v, ok
}

func main() {
	only := flag.String("rows", "", "run only the rows whose name matches this regular expression")
	list := flag.Bool("list", false, "list the rows and exit")
	flag.Parse()
	var pick *regexp.Regexp
	if *only != "" {
		var err error
		if pick, err = regexp.Compile(*only); err != nil {
			fmt.Fprintln(os.Stderr, "benchsuite: -rows:", err)
			os.Exit(2)
		}
	}
	if *list {
		for _, r := range rows {
			fmt.Printf("%-14s %s\n", r.name, r.figure)
		}
		return
	}
	start := time.Now()
	fmt.Printf("Measured %s on %s; load average before: %s\n\n", start.UTC().Format("2006-01-02 15:04 UTC"), machine(), loadavg())
	fmt.Println("| figure | anchor | before (issue 12) | now | goal | met |")
	fmt.Println("|---|---|---|---|---|---|")
	cache := map[string]metrics{}
	failed := 0
	for _, r := range rows {
		if pick != nil && !pick.MatchString(r.name) {
			continue
		}
		key := r.pkg + " " + r.bench + " " + r.benchtime
		m, ok := cache[key]
		var err error
		if !ok {
			m, err = run(r)
			cache[key] = m
		}
		shown, met := "", false
		if err != nil {
			shown = "failed: " + err.Error()
		} else {
			shown, met = r.value(m)
		}
		mark := "yes"
		if !met {
			mark, failed = "**no**", failed+1
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.figure, r.anchor, r.today, shown, r.goal, mark)
	}
	fmt.Printf("\nTook %v; load average after: %s. %d rows short of their goal.\n", time.Since(start).Round(time.Second), loadavg(), failed)
}

// run runs the row's benchmark and returns its metrics.
func run(r row) (metrics, error) {
	args := []string{"test", "-run", "^$", "-bench", r.bench, "-benchtime", r.benchtime, "-timeout", "60m", r.pkg}
	cmd := exec.Command("go", args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	m := parse(out.Bytes())
	if err != nil {
		os.Stderr.Write(out.Bytes())
		return m, fmt.Errorf("go %s: %v", strings.Join(args, " "), err)
	}
	if len(m) == 0 {
		os.Stderr.Write(out.Bytes())
		return m, fmt.Errorf("go %s reported nothing (a service not set?)", strings.Join(args, " "))
	}
	return m, nil
}

// parse reads benchmark lines: "BenchmarkName/sub-2  N  v unit  v unit...",
// keyed by "sub/unit" (the part after the top benchmark's name).
func parse(out []byte) metrics {
	m := metrics{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		sub := ""
		if i := strings.IndexByte(name, '/'); i > 0 {
			sub = name[i+1:]
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			m[sub+"/"+f[i+1]] = v
		}
	}
	return m
}

func machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				model = strings.TrimSpace(line[strings.IndexByte(line, ':')+1:])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %d GiB", (kb+512*1024)/(1024*1024))
	}
	v, _ := exec.Command("go", "env", "GOVERSION").Output()
	return fmt.Sprintf("%d CPUs (%s)%s, %s, %s", runtime.NumCPU(), model, mem, runtime.GOOS, strings.TrimSpace(string(v)))
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
