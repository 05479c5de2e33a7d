package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary act as another process: with
// SQLITESTORE_TEST_OPEN set it opens that database and exits 0 or, on
// failure, 1 with the error on stderr.
func TestMain(m *testing.M) {
	if path := os.Getenv("SQLITESTORE_TEST_OPEN"); path != "" {
		s, err := New(context.Background(), path)
		if err == nil {
			err = s.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkNewDatabaseByProcesses starts three processes that open one new
// database file at the same moment, 300 times, and reports how many opens
// failed (issue 12's thirteenth row). Run it with -benchtime 1x.
func BenchmarkNewDatabaseByProcesses(b *testing.B) {
	failed, firstErr := 0, ""
	for b.Loop() {
		dir := b.TempDir()
		for round := range 300 {
			path := filepath.Join(dir, fmt.Sprint(round, ".db"))
			var cmds []*exec.Cmd
			var stderrs []*strings.Builder
			for range 3 {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "SQLITESTORE_TEST_OPEN="+path)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				cmds, stderrs = append(cmds, cmd), append(stderrs, &stderr)
			}
			for i, cmd := range cmds {
				if cmd.Wait() != nil {
					failed++
					if firstErr == "" {
						firstErr = stderrs[i].String()
					}
				}
			}
		}
	}
	if failed > 0 {
		b.Logf("%d opens failed, the first with: %s", failed, firstErr)
	}
	b.ReportMetric(float64(failed), "failed-opens")
	b.ReportMetric(900, "opens")
}
