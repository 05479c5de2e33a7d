package memstore

// Benchmarks over the data set of internal/benchdata, the one every
// store's benchmarks use (its package doc describes the shapes), so that
// BENCHMARKS.md compares like with like. Data sets are loaded with Append
// itself, once per process, into one store. Nothing here is durable: the
// figures are the cost of the store's own work (copying, SessionInfo,
// sorting, and for search the scan fallback's JSON decoding), the floor
// under every other store.
//
//	go test -run '^$' -bench . -benchtime 2s ./store/memstore/

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
)

var benchData struct {
	sync.Mutex
	s      *Store
	loaded map[string]bool
}

// benchStore returns the store holding sets, appending those not yet
// loaded.
func benchStore(b *testing.B, sets ...benchdata.Set) *Store {
	benchData.Lock()
	defer benchData.Unlock()
	if benchData.s == nil {
		benchData.s, benchData.loaded = New(), map[string]bool{}
	}
	for _, set := range sets {
		if benchData.loaded[set.Name] {
			continue
		}
		start := time.Now()
		keys := set.Keys()
		for j, e := range set.All() {
			if err := benchData.s.Append(b.Context(), keys[j], e); err != nil {
				b.Fatal(err)
			}
		}
		benchData.loaded[set.Name] = true
		b.Logf("loaded %s (%d entries) with Append in %v", set.Name, set.Total(), time.Since(start).Round(time.Millisecond))
	}
	return benchData.s
}

// BenchmarkAppend appends one entry at a time to one session.
func BenchmarkAppend(b *testing.B) {
	s := New()
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
// session of its own: throughput, under the store's one lock.
func BenchmarkAppendParallel(b *testing.B) {
	benchdata.AppendParallel(b, New(), "bench")
}

// BenchmarkReadTail reads the newest 50 entries of a 100,000-entry session
// and of a 1,000-entry one.
func BenchmarkReadTail(b *testing.B) {
	s := benchStore(b, benchdata.TailLong, benchdata.TailShort)
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

// BenchmarkList reads the first page of a namespace of 10,000 sessions.
func BenchmarkList(b *testing.B) {
	s := benchStore(b, benchdata.List)
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		page, err := s.List(b.Context(), benchdata.List.Namespace, store.ListOptions{Limit: benchdata.PageSize})
		if err != nil || len(page.Sessions) != benchdata.PageSize || page.NextCursor == "" {
			b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
		}
	}
	done()
}

// BenchmarkSearch searches the 1,000,000 entries of the search set with
// store.Search, whose scan fallback (the store has no index) reads every
// session of the namespace, or the one asked for, and decodes every entry.
func BenchmarkSearch(b *testing.B) {
	s := benchStore(b, benchdata.Search)
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
