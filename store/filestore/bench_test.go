package filestore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/storekit"
	"github.com/spool-go/spool/transcript"
)

// Benchmarks over the data set of internal/benchdata, the one every
// store's benchmarks use (its package doc describes the shapes), so that
// BENCHMARKS.md compares like with like. Data sets are written as files
// directly, as another program would (a million synced appends would take
// most of an hour), and the index is built by a Store, as after losing it;
// TestBenchWriterMatchesAppend checks that this leaves what Append leaves.
// Run them with, for example:
//
//	go test -run '^$' -bench . -benchtime 2s ./store/filestore/
//
// Append and AppendParallel are durable appends (fdatasync). AppendVsRaw
// times, in one loop, an Append and a raw write+fdatasync of the same bytes
// to a file in the same folder, and reports their ratio. List lists the
// first page of 10,000 sessions from the index, warm and cold, for the
// shared sessions of 2 entries and for sessions of 2,000, and the design
// that reads every transcript to list. ReadTail reads the newest 50
// entries of a 1,000- and of a 100,000-entry session. Search is
// store.Search's scan fallback over 1,000,000 entries: it reads and
// decodes every transcript of the namespace.

// writeSessions writes the sessions keys, session j holding entries(j),
// as transcript files under root, the way another program would.
func writeSessions(b testing.TB, root string, keys []store.Key, entries func(j int) []transcript.Entry) {
	paths := &Store{root: root}
	var buf []byte
	for j, key := range keys {
		buf = buf[:0]
		for _, e := range entries(j) {
			var err error
			if buf, err = transcript.AppendLine(buf, e); err != nil {
				b.Fatal(err)
			}
		}
		writeRaw(b, sessionPath(paths.namespaceDir(key.Namespace()), key.ID), buf, os.O_EXCL)
	}
}

// benchSets writes sets under a new root and has a Store build their
// indexes (its first List of each namespace reads every transcript); it
// returns the root.
func benchSets(b *testing.B, sets ...benchdata.Set) string {
	root := b.TempDir()
	for _, set := range sets {
		start := time.Now()
		writeSessions(b, root, set.Keys(), set.Entries)
		written := time.Since(start)
		s := open(b, root)
		if _, err := s.List(b.Context(), set.Namespace, store.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.Logf("wrote %s (%d entries) in %v; the index in %v", set.Name, set.Total(),
			written.Round(time.Millisecond), (time.Since(start) - written).Round(time.Millisecond))
	}
	return root
}

// TestBenchWriterMatchesAppend checks the benchmarks' loader: sessions
// written as files read, list, tail and search exactly as the same entries
// appended.
func TestBenchWriterMatchesAppend(t *testing.T) {
	ns := store.Namespace{Agent: "bulk", Owner: "u"}
	keys := []store.Key{ns.Key("a"), ns.Key("b"), ns.Key("c")}
	entries := make([][]transcript.Entry, len(keys))
	for j := range keys {
		g := benchdata.NewGen(uint64(j))
		for i := range 40 {
			entries[j] = append(entries[j], g.Next(t0.Add(time.Duration(i*len(keys)+j)*time.Millisecond), (i+j)%7 == 0))
		}
	}
	writtenRoot, appendedRoot := t.TempDir(), t.TempDir()
	writeSessions(t, writtenRoot, keys, func(j int) []transcript.Entry { return entries[j] })
	written, appended := open(t, writtenRoot), open(t, appendedRoot)
	for j, key := range keys {
		for _, e := range entries[j] {
			if err := appended.Append(t.Context(), key, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for j, key := range keys {
		sameEntries(t, read(t, written, key), entries[j])
		a, totalA, errA := written.ReadTail(t.Context(), key, 5)
		b, totalB, errB := appended.ReadTail(t.Context(), key, 5)
		if errA != nil || errB != nil || totalA != totalB {
			t.Fatalf("ReadTail(%s): %d of %d (%v) and %d of %d (%v)", key, len(a), totalA, errA, len(b), totalB, errB)
		}
		sameEntries(t, a, b)
	}
	if a, b := listAll(t, written, ns), listAll(t, appended, ns); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("List: written %+v\nappended %+v", a, b)
	}
	for _, text := range []string{benchdata.Marker, "order", "you order", "ok"} {
		q := store.SearchQuery{Text: text, Limit: 7}
		a, errA := store.Search(t.Context(), written, ns, q)
		b, errB := store.Search(t.Context(), appended, ns, q)
		if errA != nil || errB != nil || len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("Search(%q): written %v (%v), appended %v (%v)", text, a, errA, b, errB)
		}
	}
}

// BenchmarkAppend appends one entry at a time to one session, each
// durable when Append returns.
func BenchmarkAppend(b *testing.B) {
	s := open(b, b.TempDir())
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

// BenchmarkAppendParallel appends from 4 goroutines per CPU, each to a
// session of its own: the store's durable write throughput.
func BenchmarkAppendParallel(b *testing.B) {
	benchdata.AppendParallel(b, open(b, b.TempDir()), "bench")
}

// BenchmarkAppendVsRaw times a durable Append and a raw write+fdatasync of
// the same line to a file in the same folder (its floor), in blocks of 20
// interleaved, so that the machine's mood is the same for both: wall time
// and this process's CPU time per operation, and their ratios (issue 12's
// fifth row; the medians of the blocks).
func BenchmarkAppendVsRaw(b *testing.B) {
	root := b.TempDir()
	s := open(b, root)
	key := store.Key{Agent: "bench", ID: "s"}
	g := benchdata.NewGen(2)
	first := g.Next(benchdata.Base, false)
	if err := s.Append(b.Context(), key, first); err != nil {
		b.Fatal(err)
	}
	raw, err := os.OpenFile(filepath.Join(root, "bench", "raw.bin"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	const block = 20
	i := 1
	var stores, raws []benchdata.Phase
	for b.Loop() {
		entries := make([]transcript.Entry, block)
		lines := make([][]byte, block)
		for k := range entries {
			entries[k] = g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)
			lines[k], _ = transcript.AppendLine(nil, entries[k])
			i++
		}
		appendBlock := func() benchdata.Phase {
			return benchdata.Measure(func() int {
				for _, e := range entries {
					if err := s.Append(b.Context(), key, e); err != nil {
						b.Fatal(err)
					}
				}
				return block
			})
		}
		rawBlock := func() benchdata.Phase {
			return benchdata.Measure(func() int {
				for _, line := range lines {
					if _, err := raw.Write(line); err != nil {
						b.Fatal(err)
					}
					if err := durable.SyncData(raw); err != nil {
						b.Fatal(err)
					}
				}
				return block
			})
		}
		st, rw := benchdata.AB(1, appendBlock, rawBlock)
		stores, raws = append(stores, st...), append(raws, rw...)
	}
	perOp := func(p benchdata.Phase) float64 { return float64(p.Wall.Nanoseconds()) / float64(p.Ops) }
	cpuOp := func(p benchdata.Phase) float64 { return float64(p.CPUPerOp().Nanoseconds()) }
	b.ReportMetric(benchdata.Medians(stores, perOp), "append-ns/op")
	b.ReportMetric(benchdata.Medians(raws, perOp), "raw-ns/op")
	b.ReportMetric(benchdata.Medians(stores, cpuOp), "append-cpu-ns/op")
	b.ReportMetric(benchdata.Medians(raws, cpuOp), "raw-cpu-ns/op")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(stores, raws, perOp)), "append/raw")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(stores, raws, cpuOp)), "cpu-append/raw")
}

// BenchmarkWritersVsRaw runs 8 writers appending to 8 sessions, and 8 raw
// write+fdatasync loops on 8 files in the same folder, in interleaved
// rounds of half a second, and reports the ratio of their rates (issue
// 12's sixth row). Run it with -benchtime 1x.
func BenchmarkWritersVsRaw(b *testing.B) {
	root := b.TempDir()
	s := open(b, root)
	const writers = 8
	heads := make([]string, writers)
	g := make([]*benchdata.Gen, writers)
	files := make([]*os.File, writers)
	// The keys are made once, as the raw loops' files are opened once:
	// the rounds time the store, not fmt.
	keys := make([]store.Key, writers)
	for w := range writers {
		keys[w] = store.Key{Agent: "bench", ID: fmt.Sprint("w", w)}
		g[w] = benchdata.NewGen(uint64(10 + w))
		f, err := os.OpenFile(filepath.Join(root, fmt.Sprint("raw", w, ".bin")), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[w] = f
	}
	var n [writers]int
	round := func(op func(w int)) benchdata.Phase {
		return benchdata.Measure(func() int {
			deadline := time.Now().Add(500 * time.Millisecond)
			done := make(chan int, writers)
			for w := range writers {
				go func() {
					k := 0
					for ; time.Now().Before(deadline); k++ {
						op(w)
					}
					done <- k
				}()
			}
			total := 0
			for range writers {
				total += <-done
			}
			return total
		})
	}
	appendOne := func(w int) {
		e := g[w].Next(benchdata.Base.Add(time.Duration(n[w])*time.Millisecond), false)
		e.ParentID = heads[w]
		if err := s.Append(b.Context(), keys[w], e); err != nil {
			b.Error(err)
		}
		heads[w] = e.ID
		n[w]++
	}
	rawOne := func(w int) {
		line, _ := transcript.AppendLine(nil, g[w].Next(benchdata.Base, false))
		if _, err := files[w].Write(line); err != nil {
			b.Error(err)
		}
		if err := durable.SyncData(files[w]); err != nil {
			b.Error(err)
		}
	}
	var stores, raws []benchdata.Phase
	for b.Loop() {
		stores, raws = benchdata.AB(6, func() benchdata.Phase { return round(appendOne) }, func() benchdata.Phase { return round(rawOne) })
	}
	b.ReportMetric(benchdata.Medians(stores, benchdata.Phase.Rate), "appends/s")
	b.ReportMetric(benchdata.Medians(raws, benchdata.Phase.Rate), "raw/s")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(stores, raws, benchdata.Phase.Rate)), "writers/raw")
}

// BenchmarkListColdVsNaive lists the first page of 10,000 sessions of 2
// entries with a new Store each time (a command-line run), and the naive
// way (read every transcript), in interleaved rounds, and reports how many
// times faster the store is (issue 12's eighth row). Run it with
// -benchtime 1x.
func BenchmarkListColdVsNaive(b *testing.B) {
	root := listRoot(b, benchdata.List.PerSession)
	ns := benchdata.List.Namespace
	cold := func() benchdata.Phase {
		return benchdata.Measure(func() int {
			s, err := New(b.Context(), root, WithRetention(store.Retention{}))
			if err != nil {
				b.Fatal(err)
			}
			firstPage(b, s, ns)
			s.Close()
			return 1
		})
	}
	naive := func() benchdata.Phase {
		return benchdata.Measure(func() int {
			naiveList(b, (&Store{root: root}).namespaceDir(ns), ns, benchdata.PageSize, 1)
			return 1
		})
	}
	cold()
	naive()
	var c, n []benchdata.Phase
	for b.Loop() {
		c, n = benchdata.AB(7, cold, naive)
	}
	ms := func(p benchdata.Phase) float64 { return float64(p.Wall.Microseconds()) / 1e3 }
	b.ReportMetric(benchdata.Medians(c, ms), "cold-ms")
	b.ReportMetric(benchdata.Medians(n, ms), "naive-ms")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(n, c, ms)), "naive/cold")
}

// listRoot returns a root whose namespace benchdata.List.Namespace holds 10,000
// sessions of perSession entries, with its index. With 2 entries, it is
// the shared list set. With more (10,000 distinct files of 2,000 entries
// would be 6 GB), one transcript is hard-linked under every name and the
// index written from its info; listing cares only that there are 10,000
// names and records.
func listRoot(b *testing.B, perSession int) string {
	if perSession == benchdata.List.PerSession {
		return benchSets(b, benchdata.List)
	}
	start := time.Now()
	root := b.TempDir()
	ns := benchdata.List.Namespace
	dir := (&Store{root: root}).namespaceDir(ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	g := benchdata.NewGen(4)
	entries := make([]transcript.Entry, perSession)
	for i := range entries {
		entries[i] = g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)
	}
	template := filepath.Join(root, "template.jsonl")
	writeRaw(b, template, lines(b, entries...), 0)
	st, err := os.Stat(template)
	if err != nil {
		b.Fatal(err)
	}
	buf := []byte((&Store{}).indexHeader())
	for j := range benchdata.List.Sessions {
		id := benchdata.List.Key(j).ID
		if err := os.Link(template, sessionPath(dir, id)); err != nil {
			b.Fatal(err)
		}
		r := &rec{info: storekit.Info(ns.Key(id), entries), fileState: stateOf(st), head: entries[len(entries)-1].ID}
		buf = appendRecord(buf, r, false)
	}
	writeRaw(b, filepath.Join(dir, indexName), buf, 0)
	b.Logf("linked 10,000 sessions of %d entries and wrote their index in %v", perSession, time.Since(start).Round(time.Millisecond))
	return root
}

// naiveList lists the way a store without an index must: read and decode
// every transcript (or every every-th), then sort.
func naiveList(b *testing.B, dir string, ns store.Namespace, limit, every int) []store.SessionInfo {
	all, err := filepath.Glob(filepath.Join(dir, "*"+transcriptExt))
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for i := 0; i < len(all); i += every {
		names = append(names, all[i])
	}
	infos := make([]store.SessionInfo, 0, len(names))
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		dec := transcript.NewDecoder(f)
		key := ns.Key(strings.TrimSuffix(filepath.Base(name), transcriptExt))
		var info store.SessionInfo
		for {
			e, err := dec.Decode()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			info.Apply(key, e)
		}
		f.Close()
		infos = append(infos, info)
	}
	storekit.SortSessions(infos)
	return infos[:min(limit, len(infos))]
}

func firstPage(b *testing.B, s *Store, ns store.Namespace) {
	page, err := s.List(b.Context(), ns, store.ListOptions{Limit: benchdata.PageSize})
	if err != nil || len(page.Sessions) != benchdata.PageSize {
		b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
	}
}

// BenchmarkList lists the first page of 10,000 sessions: warm (a Store
// that has listed the namespace before, as in a long-lived process), cold (a
// new Store each time, as in a command-line run) and naive.
func BenchmarkList(b *testing.B) {
	ns := benchdata.List.Namespace
	// 2 entries is the shared data set; 20 and 2,000 show that listing does
	// not grow with transcript length.
	for _, n := range []int{benchdata.List.PerSession, 20, 2000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			// Built once, used by every sub-benchmark below.
			root := listRoot(b, n)
			var warmNs, coldNs float64
			b.Run("warm", func(b *testing.B) {
				s := open(b, root)
				firstPage(b, s, ns)
				done := benchdata.CPUMetric(b)
				for b.Loop() {
					firstPage(b, s, ns)
				}
				done()
				warmNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			b.Run("cold", func(b *testing.B) {
				done := benchdata.CPUMetric(b)
				for b.Loop() {
					s, err := New(b.Context(), root, WithRetention(store.Retention{}))
					if err != nil {
						b.Fatal(err)
					}
					firstPage(b, s, ns)
					s.Close()
				}
				done()
				coldNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			// With 2,000-entry sessions the naive lister would decode 20
			// million entries, minutes a run: it reads one session in a
			// hundred, and the figures are scaled up (its cost is linear
			// in the sessions by construction).
			every := 1
			if n > 100 {
				every = 100
			}
			b.Run(fmt.Sprintf("naive-1-in-%d", every), func(b *testing.B) {
				for b.Loop() {
					naiveList(b, (&Store{root: root}).namespaceDir(ns), ns, benchdata.PageSize, every)
				}
				naive := float64(b.Elapsed().Nanoseconds()) / float64(b.N) * float64(every)
				b.ReportMetric(naive, "naive-ns/list")
				if warmNs > 0 && coldNs > 0 {
					b.ReportMetric(naive/warmNs, "naive/warm")
					b.ReportMetric(naive/coldNs, "naive/cold")
				}
			})
		})
	}
}

// BenchmarkReadTail reads the newest 50 entries of a 100,000-entry session
// and of a 1,000-entry one.
func BenchmarkReadTail(b *testing.B) {
	root := benchSets(b, benchdata.TailLong, benchdata.TailShort)
	s := open(b, root)
	tail := func(b *testing.B, set benchdata.Set) {
		entries, total, err := s.ReadTail(b.Context(), set.Key(0), benchdata.TailN)
		if err != nil || len(entries) != benchdata.TailN || total != set.PerSession {
			b.Fatalf("ReadTail: %d entries of %d, %v", len(entries), total, err)
		}
	}
	for _, set := range []benchdata.Set{benchdata.TailLong, benchdata.TailShort} {
		b.Run(fmt.Sprint("entries=", set.PerSession), func(b *testing.B) {
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				tail(b, set)
			}
			done()
		})
	}
	b.Run("ratio", func(b *testing.B) {
		// Both in one loop, so that the machine's mood is the same for both.
		var inShort, inLong time.Duration
		for b.Loop() {
			t := time.Now()
			tail(b, benchdata.TailShort)
			m := time.Now()
			tail(b, benchdata.TailLong)
			inShort += m.Sub(t)
			inLong += time.Since(m)
		}
		b.ReportMetric(float64(inLong)/float64(inShort), "100k/1k")
	})
}

// BenchmarkSearch searches the 1,000,000 entries of the search set with
// store.Search, whose scan fallback (the store has no text index) lists
// the namespace and reads and decodes every transcript in it, or only the
// session asked for.
func BenchmarkSearch(b *testing.B) {
	s := open(b, benchSets(b, benchdata.Search))
	for _, q := range benchdata.Queries {
		b.Run(q.Name, func(b *testing.B) {
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				hits, err := store.Search(b.Context(), s, benchdata.Search.Namespace, q.SearchQuery())
				if err != nil || len(hits) != q.Hits {
					b.Fatalf("Search(%q): %d hits, want %d; %v", q.Text, len(hits), q.Hits, err)
				}
			}
			done()
		})
	}
}
