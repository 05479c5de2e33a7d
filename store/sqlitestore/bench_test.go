package sqlitestore

// Benchmarks of the store over the data set of internal/benchdata, the
// one every store's benchmarks use (its package doc describes the shapes),
// so that BENCHMARKS.md compares like with like. Besides those, RawFsync is
// the floor under a durable append, AppendFsync shows what committing
// with fsync instead of fdatasync (see New) would cost, and SearchScopes
// what a search pays for other namespaces' newer matches.
//
// The loaded database (about 1 GB) is built on first use, in two to four
// minutes, cached in the system temp folder (see benchDB for its name) and
// reused by later runs; pass -rebuild-bench to build it again. Besides
// ns/op, every benchmark reports cpu-ns/op, the process's CPU time per
// operation, which varies far less on a shared machine.
//
// Run them with
//
//	go test -run '^$' -bench . -benchtime 2s ./store/sqlitestore/

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

func BenchmarkAppend(b *testing.B)         { benchAppend(b, chosenDriver) }
func BenchmarkAppendParallel(b *testing.B) { benchAppendParallel(b, chosenDriver) }
func BenchmarkReadTail(b *testing.B)       { benchTail(b, chosenDriver) }
func BenchmarkList(b *testing.B)           { benchList(b, chosenDriver) }
func BenchmarkSearch(b *testing.B)         { benchSearch(b, chosenDriver) }

// BenchmarkAppendFsync is BenchmarkAppend with modernc.org/sqlite
// switched back, process-wide, from fdatasync to fsync (its own default,
// which New changes): what a program pays by calling
// sqlite.Fdatasync(false).
func BenchmarkAppendFsync(b *testing.B) {
	commitWithFdatasync() // so that New, in benchAppend, does not switch it after us
	prev, err := sqlite.Fdatasync(false)
	if err != nil {
		b.Skip(err)
	}
	defer sqlite.Fdatasync(prev)
	benchAppend(b, chosenDriver)
}

// BenchmarkRawFsync is the floor under a durable append: writing the same
// 300 bytes to a file in the same folder and fdatasync-ing it.
func BenchmarkRawFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, _ := transcript.AppendLine(nil, benchdata.NewGen(1).Next(time.Now(), false))
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
	done()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

func benchOpen(b *testing.B, drv sqlDriver, path string) *Store {
	s, err := open(b.Context(), path, drv)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchAppend appends 300-byte entries to one session, each durable.
func benchAppend(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, filepath.Join(b.TempDir(), "append.db"))
	key := store.Key{Agent: "bench", ID: "append"}
	g := benchdata.NewGen(2)
	i := 0
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		if err := s.Append(b.Context(), key, g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	done()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// benchAppendParallel appends from 4 goroutines per CPU, each to a
// session of its own: the store's durable write throughput.
func benchAppendParallel(b *testing.B, drv sqlDriver) {
	benchdata.AppendParallel(b, benchOpen(b, drv, filepath.Join(b.TempDir(), "append.db")), "bench")
}

// BenchmarkTurn appends turns as BenchmarkTurnVsMastra does (a user and an
// assistant message, one AppendBatch, on one session), in a folder of
// the system's temp folder (TMPDIR, which may be a tmpfs, where a sync
// costs nothing and what is left is the store's own work): with the
// indexer running beside the appends, as a Store runs (indexed), and with
// the indexer off (appends), which is what a turn waits for. cpu-ns/op
// is the process's CPU, the indexer's included when it runs.
func BenchmarkTurn(b *testing.B) {
	for _, indexed := range []bool{true, false} {
		name := "indexed"
		if !indexed {
			name = "appends"
		}
		b.Run(name, func(b *testing.B) {
			saved := indexByHand
			defer func() { indexByHand = saved }()
			indexByHand = !indexed
			w := newTurnWriter(benchOpen(b, chosenDriver, filepath.Join(b.TempDir(), "turns.db")))
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				w.turn(b)
			}
			done()
		})
	}
}

// benchTail reads the newest 50 entries of a 100,000-entry session and of
// a 1,000-entry one.
func benchTail(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	for _, set := range []benchdata.Set{benchdata.TailLong, benchdata.TailShort} {
		b.Run(fmt.Sprint("entries=", set.PerSession), func(b *testing.B) {
			key := set.Key(0)
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				got, total, err := s.ReadTail(b.Context(), key, benchdata.TailN)
				if err != nil || len(got) != benchdata.TailN || total != set.PerSession {
					b.Fatalf("ReadTail: %d entries of %d, %v", len(got), total, err)
				}
			}
			done()
		})
	}
}

// benchList reads the first page (50) of a namespace of 10,000 sessions.
func benchList(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		page, err := s.List(b.Context(), benchdata.List.Namespace, store.ListOptions{Limit: benchdata.PageSize})
		if err != nil || len(page.Sessions) != benchdata.PageSize || page.NextCursor == "" {
			b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
		}
	}
	done()
}

// benchSearch searches the 1,000,000 entries of the search namespace.
func benchSearch(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	for _, q := range benchdata.Queries {
		b.Run(q.Name, func(b *testing.B) {
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				hits, err := s.Search(b.Context(), benchdata.Search.Namespace, q.SearchQuery())
				if err != nil || len(hits) != q.Hits {
					b.Fatalf("Search(%q): %d hits, want %d; %v", q.Text, len(hits), q.Hits, err)
				}
			}
			done()
		})
	}
}

// BenchmarkSearchScopes searches a common word and a short one in each
// namespace of the benchmark database, from the namespace with the newest entries
// (list) to the one with the oldest (tail): what a search costs when other
// namespaces hold newer matches.
func BenchmarkSearchScopes(b *testing.B) {
	s := benchOpen(b, chosenDriver, benchDB(b))
	for _, set := range []benchdata.Set{benchdata.List, benchdata.Search, benchdata.TailLong} {
		for _, text := range []string{"order", "ok"} {
			b.Run(set.Namespace.Agent+"/"+text, func(b *testing.B) {
				q := store.SearchQuery{Text: text, Limit: benchdata.Limit}
				done := benchdata.CPUMetric(b)
				for b.Loop() {
					hits, err := s.Search(b.Context(), set.Namespace, q)
					if err != nil || len(hits) != benchdata.Limit {
						b.Fatalf("Search(%q) in %s: %d hits, %v", text, set.Namespace, len(hits), err)
					}
				}
				done()
			})
		}
	}
}
