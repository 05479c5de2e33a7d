package sqlitestore

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// transaction without a sync of its own. It reports both rates, their
// median ratio (issue 12's fourth row) and each side's CPU time a turn
// (each process's own). It installs the npm packages into testdata/mastra
// when they are missing, and skips without Node.js.
//
// Two floors of a durable turn run in the same rounds, each one write of
// a turn's bytes (two entries) and one fdatasync a turn: appended at the
// end of a file, which grows it, so that every sync also commits the file
// system's journal (the size changed); and written over a file already
// written and synced, the way SQLite writes its log once the log has grown
// to its checkpoint size (it starts again from the top after a
// checkpoint), which syncs the data alone. The second is the lower bound
// of spool's turn; the first is what a store that only appends pays.
//
// The Store's search indexer runs once its appends pause (indexIdle): a
// round of spool's turns is indexed after it, not beside it. Each round
// is followed by a wait until the indexer has applied it, outside the
// measured phases, so that the index's work lands in no other round; its
// CPU a turn is reported apart (spool-index-cpu-µs/turn).
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
	w := newTurnWriter(s)
	const turns = 200
	var ix []benchdata.Phase
	spool := func() benchdata.Phase {
		p := benchdata.Measure(func() int {
			for range turns {
				w.turn(b)
			}
			return turns
		})
		ix = append(ix, benchdata.Measure(func() int {
			indexDrained(b, s)
			return turns
		}))
		return p
	}
	mastra := func() benchdata.Phase {
		fmt.Fprintf(in, "%d\n", turns)
		line, err := out.ReadString('\n')
		if err != nil {
			b.Fatalf("bench.mjs: %v", err)
		}
		var wall, cpu int64
		if _, err := fmt.Sscan(line, &wall, &cpu); err != nil {
			b.Fatalf("bench.mjs: %q: %v", line, err)
		}
		return benchdata.Phase{Ops: turns, Wall: time.Duration(wall) * time.Microsecond, CPU: time.Duration(cpu) * time.Microsecond}
	}
	appendFloor := syncFloor(b, filepath.Join(dir, "append.bin"), false, turns)
	overwriteFloor := syncFloor(b, filepath.Join(dir, "overwrite.bin"), true, turns)
	spool()
	mastra()
	var sp, ma, fa, fo []benchdata.Phase
	for b.Loop() {
		for r := range 9 {
			if r%2 == 0 {
				sp = append(sp, spool())
				ma = append(ma, mastra())
				fa = append(fa, appendFloor())
				fo = append(fo, overwriteFloor())
			} else {
				fo = append(fo, overwriteFloor())
				fa = append(fa, appendFloor())
				ma = append(ma, mastra())
				sp = append(sp, spool())
			}
		}
	}
	cpuµs := func(p benchdata.Phase) float64 { return float64(p.CPUPerOp()) / 1e3 }
	b.ReportMetric(benchdata.Medians(sp, benchdata.Phase.Rate), "spool-turns/s")
	b.ReportMetric(benchdata.Medians(ma, benchdata.Phase.Rate), "mastra-turns/s")
	b.ReportMetric(benchdata.Medians(sp, cpuµs), "spool-cpu-µs/turn")
	b.ReportMetric(benchdata.Medians(ma, cpuµs), "mastra-cpu-µs/turn")
	b.ReportMetric(benchdata.Medians(ix, cpuµs), "spool-index-cpu-µs/turn")
	b.ReportMetric(benchdata.Medians(fa, benchdata.Phase.Rate), "append-floor-turns/s")
	b.ReportMetric(benchdata.Medians(fo, benchdata.Phase.Rate), "overwrite-floor-turns/s")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(sp, ma, benchdata.Phase.Rate)), "spool/mastra")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(fa, ma, benchdata.Phase.Rate)), "append-floor/mastra")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(fo, ma, benchdata.Phase.Rate)), "overwrite-floor/mastra")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(sp, fo, benchdata.Phase.Rate)), "spool/overwrite-floor")
}

// indexDrained has the indexer of s apply every entry the log holds
// (as after a delete: at once, not when a batch is due) and waits for it.
func indexDrained(b *testing.B, s *Store) {
	s.pokeIndex()
	for {
		var mark, last int64
		if err := s.ix.db.QueryRow(`SELECT mark FROM state`).Scan(&mark); err != nil {
			b.Fatal(err)
		}
		if err := s.w.QueryRow(`SELECT coalesce(max(seq), 0) FROM fts_log`).Scan(&last); err != nil {
			b.Fatal(err)
		}
		if mark >= last {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// syncFloor returns a phase of turns floor turns, each one write of a
// turn's bytes (two entries) to the file at path and one fdatasync: at
// the file's end (growing it) or, with overwrite, over a 4 MiB file
// written and synced beforehand (about the size SQLite's log grows to
// before its automatic checkpoint), from its top again once at its end.
func syncFloor(b *testing.B, path string, overwrite bool, turns int) func() benchdata.Phase {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	const size = 4 << 20
	if overwrite {
		if _, err := f.Write(make([]byte, size)); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	line := make([]byte, 2*benchdata.EntrySize)
	var off int64
	return func() benchdata.Phase {
		return benchdata.Measure(func() int {
			for range turns {
				if _, err := f.WriteAt(line, off); err != nil {
					b.Fatal(err)
				}
				if off += int64(len(line)); overwrite && off+int64(len(line)) > size {
					off = 0
				}
				if err := benchdata.SyncData(f); err != nil {
					b.Fatal(err)
				}
			}
			return turns
		})
	}
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

// turnWriter appends turns of the shared data set to one session, as the
// Mastra row's turn is: a user message and its answer in one AppendBatch.
type turnWriter struct {
	s    *Store
	key  store.Key
	g    *benchdata.Gen
	head string
	n    int // entries appended
}

func newTurnWriter(s *Store) *turnWriter {
	return &turnWriter{s: s, key: store.Key{Agent: "bench", ID: "turns"}, g: benchdata.NewGen(5)}
}

// turn appends one turn.
func (w *turnWriter) turn(b *testing.B) {
	user := w.g.Next(benchdata.Base.Add(time.Duration(w.n)*time.Millisecond), false)
	user.ParentID = w.head
	answer := w.g.Next(benchdata.Base.Add(time.Duration(w.n+1)*time.Millisecond), false)
	answer.ParentID = user.ID
	if err := w.s.AppendBatch(b.Context(), w.key, []transcript.Entry{user, answer}); err != nil {
		b.Fatal(err)
	}
	w.head, w.n = answer.ID, w.n+2
}
