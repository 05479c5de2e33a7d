package redisstore_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/redisstore"
	"github.com/spool-go/spool/transcript"
)

// Benchmarks over the data set of internal/benchdata, the one every
// store's benchmarks use (its package doc describes the shapes), so that
// BENCHMARKS.md compares like with like:
//
//	go test -run '^$' -bench . -benchtime 2s ./store/redisstore/
//
// Data sets are loaded with BulkAppend (the append script, pipelined;
// TestBulkAppendMatchesAppend checks it leaves what Append leaves), once
// per process, each under a key prefix of its own, and removed by
// TestMain. Besides ns/op, benchmarks report cpu-ns/op, this process's CPU
// time, and redis-µs/op, the time Redis spent in commands (see
// serverTime).
var datasets struct {
	sync.Mutex
	m map[string]*redisstore.Store
}

func TestMain(m *testing.M) {
	code := m.Run()
	for name, s := range datasets.m {
		if err := unlinkPrefix(s.Client(), s.Prefix()); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup of benchmark data set %s: %v\n", name, err)
			code = 1
		}
		s.Close()
	}
	os.Exit(code)
}

// dataset returns the store holding data set name, loading it with load
// the first time.
func dataset(b *testing.B, name string, load func(s *redisstore.Store) error) *redisstore.Store {
	b.Helper()
	datasets.Lock()
	defer datasets.Unlock()
	if s, ok := datasets.m[name]; ok {
		return s
	}
	s, err := redisstore.Open(context.Background(), redisURL(b), redisstore.WithPrefix(randomPrefix()))
	if err != nil {
		b.Fatal(err)
	}
	if datasets.m == nil {
		datasets.m = map[string]*redisstore.Store{}
	}
	datasets.m[name] = s
	start := time.Now()
	if err := load(s); err != nil {
		b.Fatalf("loading %s: %v", name, err)
	}
	b.Logf("loaded data set %s in %v", name, time.Since(start).Round(time.Millisecond))
	return s
}

// keyed pairs entries with the session they go to, for BulkAppend.
func keyed(key store.Key, entries []transcript.Entry) []redisstore.Keyed {
	out := make([]redisstore.Keyed, len(entries))
	for i, e := range entries {
		out[i] = redisstore.Keyed{Key: key, Entry: e}
	}
	return out
}

// loadSets loads sets into s with BulkAppend (the append script,
// pipelined), a session at a time: each session is a list of its own, so
// the order of sessions changes nothing.
func loadSets(s *redisstore.Store, sets ...benchdata.Set) error {
	for _, set := range sets {
		for j := range set.Sessions {
			if err := redisstore.BulkAppend(context.Background(), s, keyed(set.Key(j), set.Entries(j))); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestBulkAppendMatchesAppend checks the benchmarks' loader: sessions
// loaded with BulkAppend read, list and search exactly as the same entries
// appended one by one.
func TestBulkAppendMatchesAppend(t *testing.T) {
	loaded, appended := newStore(t), newStore(t)
	ns := store.Namespace{Agent: "bulk", Owner: "u"}
	var items []redisstore.Keyed
	for j := range 3 {
		key := ns.Key(fmt.Sprint("s", j))
		g := benchdata.NewGen(uint64(j))
		for i := range 40 {
			items = append(items, redisstore.Keyed{Key: key, Entry: g.Next(benchdata.Base.Add(time.Duration(i*3+j)*time.Millisecond), (i+j)%7 == 0)})
		}
	}
	if err := redisstore.BulkAppend(t.Context(), loaded, items); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if err := appended.Append(t.Context(), it.Key, it.Entry); err != nil {
			t.Fatal(err)
		}
	}
	for j := range 3 {
		key := ns.Key(fmt.Sprint("s", j))
		a, errA := loaded.Read(t.Context(), key)
		b, errB := appended.Read(t.Context(), key)
		if errA != nil || errB != nil || len(a) != 40 || !reflect.DeepEqual(a, b) {
			t.Fatalf("Read(%s): loaded %d (%v), appended %d (%v)", key, len(a), errA, len(b), errB)
		}
	}
	pa, errA := loaded.List(t.Context(), ns, store.ListOptions{})
	pb, errB := appended.List(t.Context(), ns, store.ListOptions{})
	if errA != nil || errB != nil || !reflect.DeepEqual(pa, pb) {
		t.Fatalf("List: loaded %+v (%v)\nappended %+v (%v)", pa, errA, pb, errB)
	}
	for _, text := range []string{benchdata.Marker, "order", "you order", "ok"} {
		q := store.SearchQuery{Text: text, Limit: 7}
		a, errA := store.Search(t.Context(), loaded, ns, q)
		b, errB := store.Search(t.Context(), appended, ns, q)
		if errA != nil || errB != nil || len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Fatalf("Search(%q): loaded %v (%v), appended %v (%v)", text, a, errA, b, errB)
		}
	}
}

// serverTime returns the microseconds Redis has spent in commands so far,
// from INFO commandstats: Redis measures them as wall time, so on a busy
// machine they include the time its process waited for a CPU. Other
// clients' commands count too; the benchmarks run alone or close to it.
func serverTime(b *testing.B, s *redisstore.Store) float64 {
	b.Helper()
	info, err := s.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for line := range strings.Lines(info) {
		_, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSpace(stats), ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				var n float64
				fmt.Sscan(v, &n)
				total += n
			}
		}
	}
	return total
}

// reportServer reports Redis's time per operation since start.
func reportServer(b *testing.B, s *redisstore.Store, start float64) {
	b.ReportMetric((serverTime(b, s)-start)/float64(b.N), "redis-µs/op")
}

// BenchmarkAppend measures one Append of an entry, one writer on one
// session, with percentiles of its latency.
func BenchmarkAppend(b *testing.B) {
	s := newStore(b)
	key := store.Key{Agent: "bench", ID: "append"}
	g := benchdata.NewGen(2)
	entries := make([]transcript.Entry, b.N)
	for i := range entries {
		entries[i] = g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)
	}
	lat := make([]time.Duration, b.N)
	ctx := context.Background()
	srv := serverTime(b, s)
	b.ResetTimer()
	done := benchdata.CPUMetric(b)
	for i, e := range entries {
		t0 := time.Now()
		if err := s.Append(ctx, key, e); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	done()
	reportServer(b, s, srv)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAppendParallel appends from 4 writers per CPU, each on a
// session of its own: throughput.
func BenchmarkAppendParallel(b *testing.B) {
	s := newStore(b)
	srv := serverTime(b, s)
	benchdata.AppendParallel(b, s, "bench")
	reportServer(b, s, srv)
}

// BenchmarkReadTail measures reading the newest 50 entries of a 100,000-
// entry session, and of a 1,000-entry one for comparison.
func BenchmarkReadTail(b *testing.B) {
	s := dataset(b, "tail", func(s *redisstore.Store) error {
		return loadSets(s, benchdata.TailLong, benchdata.TailShort)
	})
	for _, set := range []benchdata.Set{benchdata.TailLong, benchdata.TailShort} {
		b.Run(fmt.Sprint("entries=", set.PerSession), func(b *testing.B) {
			key := set.Key(0)
			srv := serverTime(b, s)
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				got, total, err := s.ReadTail(context.Background(), key, benchdata.TailN)
				if err != nil || len(got) != benchdata.TailN || total != set.PerSession {
					b.Fatalf("ReadTail: %d entries of %d, %v", len(got), total, err)
				}
			}
			done()
			reportServer(b, s, srv)
		})
	}
}

// BenchmarkList measures the first page (50) of a namespace with 10,000
// sessions.
func BenchmarkList(b *testing.B) {
	s := dataset(b, "list", func(s *redisstore.Store) error { return loadSets(s, benchdata.List) })
	newest := benchdata.List.Key(benchdata.List.Sessions - 1).ID
	srv := serverTime(b, s)
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		page, err := s.List(context.Background(), benchdata.List.Namespace, store.ListOptions{Limit: benchdata.PageSize})
		if err != nil || len(page.Sessions) != benchdata.PageSize || page.Sessions[0].ID != newest {
			b.Fatalf("List: %d sessions, %v", len(page.Sessions), err)
		}
	}
	done()
	reportServer(b, s, srv)
}

// BenchmarkSearch measures store.Search, the scan fallback the runtime
// uses for this store, over the 1,000,000 entries of the search set: it
// lists the namespace and reads every session (or the one asked for) with one
// LRANGE each, and decodes every entry.
func BenchmarkSearch(b *testing.B) {
	s := dataset(b, "search", func(s *redisstore.Store) error { return loadSets(s, benchdata.Search) })
	for _, q := range benchdata.Queries {
		b.Run(q.Name, func(b *testing.B) {
			srv := serverTime(b, s)
			done := benchdata.CPUMetric(b)
			for b.Loop() {
				hits, err := store.Search(context.Background(), s, benchdata.Search.Namespace, q.SearchQuery())
				if err != nil || len(hits) != q.Hits {
					b.Fatalf("Search(%q): %d hits, want %d; %v", q.Text, len(hits), q.Hits, err)
				}
			}
			done()
			reportServer(b, s, srv)
		})
	}
}

// BenchmarkRoundTrip is one PING: the floor under every figure above on
// the machine it runs on, cpu-ns/op included (a goroutine waiting for a
// reply costs the Go scheduler some CPU).
func BenchmarkRoundTrip(b *testing.B) {
	s := newStore(b)
	srv := serverTime(b, s)
	done := benchdata.CPUMetric(b)
	for b.Loop() {
		if err := s.Client().Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	done()
	reportServer(b, s, srv)
}
