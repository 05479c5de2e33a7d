package sqlitestore

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkTurnVsMastra saves turns (a user and an assistant message) with
// this store and with Mastra's LibSQLStore (@mastra/libsql, driven from
// Node.js by testdata/mastra/bench.mjs), side by side: rounds of 200 turns
// each, interleaved, each store on a database file of its own in the same
// folder. A spool turn is one AppendBatch of the two entries: one
// transaction, committed with the log synced (synchronous=FULL), so the
// turn survives a power cut; Mastra's is one saveMessages call, one
// transaction without a sync of its own. It reports both rates and their
// median ratio (issue 12's fourth row). It installs the npm packages into
// testdata/mastra when they are missing, and skips without Node.js.
//
//	go test -run '^$' -bench TurnVsMastra -benchtime 1x ./store/sqlitestore/
func BenchmarkTurnVsMastra(b *testing.B) {
	node := mastraNode(b)
	dir := b.TempDir()
	cmd := exec.Command(node, filepath.Join("testdata", "mastra", "bench.mjs"), filepath.Join(dir, "mastra.db"))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	out := bufio.NewReader(outPipe)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("bench.mjs: %q %v", line, err)
	}
	s, err := New(b.Context(), filepath.Join(dir, "spool.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key := store.Key{Agent: "bench", ID: "turns"}
	g := benchdata.NewGen(5)
	head, i := "", 0
	const turns = 200
	spool := func() benchdata.Phase {
		return benchdata.Phase{Ops: turns, Wall: func() time.Duration {
			start := time.Now()
			for range turns {
				user := g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)
				user.ParentID = head
				answer := g.Next(benchdata.Base.Add(time.Duration(i+1)*time.Millisecond), false)
				answer.ParentID = user.ID
				if err := s.AppendBatch(b.Context(), key, []transcript.Entry{user, answer}); err != nil {
					b.Fatal(err)
				}
				head, i = answer.ID, i+2
			}
			return time.Since(start)
		}()}
	}
	mastra := func() benchdata.Phase {
		fmt.Fprintf(in, "%d\n", turns)
		line, err := out.ReadString('\n')
		if err != nil {
			b.Fatalf("bench.mjs: %v", err)
		}
		us, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			b.Fatalf("bench.mjs: %q", line)
		}
		return benchdata.Phase{Ops: turns, Wall: time.Duration(us) * time.Microsecond}
	}
	// The floor of a durable turn: one write and sync of a turn's bytes to
	// a file in the same folder, measured in the same rounds.
	raw, err := os.OpenFile(filepath.Join(dir, "raw.bin"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	floor := func() benchdata.Phase {
		line := make([]byte, 2*benchdata.EntrySize)
		return benchdata.Measure(func() int {
			for range turns {
				raw.Write(line)
				if err := benchdata.SyncData(raw); err != nil {
					b.Fatal(err)
				}
			}
			return turns
		})
	}
	spool()
	mastra()
	var sp, ma, fl []benchdata.Phase
	for b.Loop() {
		for r := range 9 {
			if r%2 == 0 {
				sp = append(sp, spool())
				ma = append(ma, mastra())
			} else {
				ma = append(ma, mastra())
				sp = append(sp, spool())
			}
			fl = append(fl, floor())
		}
	}
	b.ReportMetric(benchdata.Medians(sp, benchdata.Phase.Rate), "spool-turns/s")
	b.ReportMetric(benchdata.Medians(ma, benchdata.Phase.Rate), "mastra-turns/s")
	b.ReportMetric(benchdata.Medians(fl, benchdata.Phase.Rate), "fsync-floor-turns/s")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(sp, ma, benchdata.Phase.Rate)), "spool/mastra")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(fl, ma, benchdata.Phase.Rate)), "floor/mastra")
}

// mastraNode returns the node binary, with Mastra's packages installed in
// testdata/mastra (npm ci from its lock file, when node_modules is
// missing), or skips.
func mastraNode(b *testing.B) string {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("Node.js is not installed")
	}
	dir := filepath.Join("testdata", "mastra")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@mastra", "libsql")); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = dir
		npm.Stdout, npm.Stderr = os.Stderr, os.Stderr
		if err := npm.Run(); err != nil {
			b.Fatalf("installing Mastra's packages in %s: %v", dir, err)
		}
	}
	return node
}
