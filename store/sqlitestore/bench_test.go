package sqlitestore

// Benchmarks of the store over one data set. Other stores' benchmarks
// should build the same shapes, so that BENCHMARKS.md compares like with
// like:
//
//   - An entry is exactly 300 bytes on the wire (transcript.AppendJSON):
//     alternating user.message and assistant.message entries of one turn
//     each, chained by parentId, with ULID ids, millisecond timestamps and
//     text of English words from the vocabulary in dataset_test.go (216
//     words of customer-support chat, most common first), drawn with a Zipf
//     distribution (s=1.1, v=4) from a seeded PCG generator, cut to length.
//   - Append: one session, each operation one 300-byte entry appended with
//     its parent, durable when Append returns; AppendParallel: 4 writers
//     per CPU, a session each. RawFsync is the floor: the same 300 bytes
//     written to a file in the same folder and fdatasync-ed.
//   - Tail: the newest 50 entries of a session of 100,000 entries (and, for
//     comparison, of a session of 1,000).
//   - List: the first page (50) of one scope holding 10,000 sessions of 2
//     entries each.
//   - Search: one scope of 1,000 sessions of 1,000 entries (1,000,000
//     entries); entries of different sessions interleave in time. Every
//     10,007th entry (global index) also carries the word "zanzibar" (100
//     entries). Queries, limit 50: "zanzibar" (rare), "order" (common),
//     "refund invoice" (two words), "zanzibar" and "order" within one
//     session, "ok" (too short for the index: a scan).
//
// The loaded database (about 1 GB) is built on first use, in two to four
// minutes, cached in the system temp folder (spool-sqlitestore-bench-v2.db)
// and reused by later runs; pass -rebuild-bench to build it again. Besides
// ns/op, every benchmark reports cpu-ns/op, the process's CPU time per
// operation, which varies far less on a shared machine.
//
// Run them with
//
//	go test -run '^$' -bench . -benchtime 2s ./store/sqlitestore/

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

func BenchmarkAppend(b *testing.B)         { benchAppend(b, chosenDriver) }
func BenchmarkAppendParallel(b *testing.B) { benchAppendParallel(b, chosenDriver) }
func BenchmarkReadTail(b *testing.B)       { benchTail(b, chosenDriver) }
func BenchmarkList(b *testing.B)           { benchList(b, chosenDriver) }
func BenchmarkSearch(b *testing.B)         { benchSearch(b, chosenDriver) }

// BenchmarkAppendFdatasync is BenchmarkAppend with modernc.org/sqlite
// switched, process-wide, from fsync to fdatasync: what a program gains by
// calling sqlite.Fdatasync(true) itself.
func BenchmarkAppendFdatasync(b *testing.B) {
	prev, err := sqlite.Fdatasync(true)
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
	line, _ := transcript.AppendLine(nil, newEntryGen(1).entry("", 0, time.Now(), false))
	done := cpuMetric(b)
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

// cpuMetric starts counting the process's CPU time; the function it
// returns reports it per operation as cpu-ns/op. On a machine shared with
// other work, CPU time varies far less than wall time.
func cpuMetric(b *testing.B) func() {
	start := cpuNanos()
	return func() {
		if start > 0 {
			b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
		}
	}
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
	g := newEntryGen(2)
	head := ""
	at := time.Now()
	i := 0
	done := cpuMetric(b)
	for b.Loop() {
		e := g.entry(head, i, at.Add(time.Duration(i)*time.Millisecond), false)
		if err := s.Append(b.Context(), key, e); err != nil {
			b.Fatal(err)
		}
		head = e.ID
		i++
	}
	done()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// benchAppendParallel appends from 4 goroutines per CPU, each to a
// session of its own: the store's durable write throughput.
func benchAppendParallel(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, filepath.Join(b.TempDir(), "append.db"))
	b.SetParallelism(4)
	done := cpuMetric(b)
	b.RunParallel(func(pb *testing.PB) {
		key := store.Key{Agent: "bench", ID: transcript.NewID(time.Now())}
		g := newEntryGen(uint64(time.Now().UnixNano()))
		head := ""
		at := time.Now()
		for i := 0; pb.Next(); i++ {
			e := g.entry(head, i, at.Add(time.Duration(i)*time.Millisecond), false)
			if err := s.Append(b.Context(), key, e); err != nil {
				b.Error(err)
				return
			}
			head = e.ID
		}
	})
	done()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// benchTail reads the newest 50 entries of a 100,000-entry session and of
// a 1,000-entry one.
func benchTail(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	for _, tc := range []struct {
		name string
		id   string
		n    int
	}{{"100000", "long", tailLong}, {"1000", "short", tailShort}} {
		b.Run(tc.name, func(b *testing.B) {
			key := tailScope.Key(tc.id)
			done := cpuMetric(b)
			for b.Loop() {
				got, total, err := s.ReadTail(b.Context(), key, 50)
				if err != nil || len(got) != 50 || total != tc.n {
					b.Fatalf("ReadTail: %d entries of %d, %v", len(got), total, err)
				}
			}
			done()
		})
	}
}

// benchList reads the first page (50) of a scope of 10,000 sessions.
func benchList(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	done := cpuMetric(b)
	for b.Loop() {
		page, err := s.List(b.Context(), listScope, store.ListOptions{Limit: 50})
		if err != nil || len(page.Sessions) != 50 || page.NextCursor == "" {
			b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
		}
	}
	done()
}

// benchSearch searches the 1,000,000 entries of the search scope.
func benchSearch(b *testing.B, drv sqlDriver) {
	s := benchOpen(b, drv, benchDB(b))
	for _, tc := range []struct {
		name, text, session string
		min                 int
	}{
		{"rare", "zanzibar", "", 50},
		{"common", "order", "", 50},
		{"two-words", "refund invoice", "", 50},
		{"one-session-rare", "zanzibar", "s0", 1},
		{"one-session-common", "order", "s0", 50},
		{"short-word-scan", "ok", "", 50},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q := store.SearchQuery{Text: tc.text, Session: tc.session, Limit: 50}
			done := cpuMetric(b)
			for b.Loop() {
				hits, err := s.Search(b.Context(), searchScope, q)
				if err != nil || len(hits) < tc.min {
					b.Fatalf("Search(%q): %d hits, %v", tc.text, len(hits), err)
				}
			}
			done()
		})
	}
}
