package replicatest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/pgstore"
	"github.com/spool-go/spool/store/pgstore/pgtest"
)

// BenchmarkInvoke measures POST /invoke against one and two replicas on
// one database, with 16 requests in flight, spread over 64 sessions or
// all on one. Unlike `spool bench` (one process per replica, each with
// sessions of its own), its workers share session ids across replicas:
// worker w sends to replica w mod replicas, request i to session i mod
// sessions, so with one session every turn waits for the session lock
// and half of them take it over from the other replica.
//
// Each run starts its replicas on a fresh schema, so run it with a fixed
// count: go test -run '^$' -bench Invoke -benchtime 2000x. It reports
// req/s and the p50 and p99 latency in milliseconds; the replicas, the
// database and this process share the machine's CPUs.
func BenchmarkInvoke(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		for _, sessions := range []int{64, 1} {
			b.Run(fmt.Sprintf("replicas=%d/sessions=%d", replicas, sessions), func(b *testing.B) {
				benchInvoke(b, replicas, sessions, 16)
			})
		}
	}
}

func benchInvoke(b *testing.B, replicas, sessions, concurrency int) {
	d := newDeployment(b)
	var reps []*replica
	for i := range replicas {
		reps = append(reps, d.startReplica(b, string(rune('A'+i))))
	}
	c := newClient()
	defer c.close()
	ctx := context.Background()
	var (
		next   atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		failed atomic.Int64
		first  atomic.Value
		wg     sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep := reps[w%len(reps)]
			var mine []time.Duration
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					break
				}
				sid := fmt.Sprintf("bench-%d", i%int64(sessions))
				t0 := time.Now()
				if _, err := c.invoke(ctx, rep.URL, sid, "hello from the replica benchmark"); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed; the first: %v", n, first.Load())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
	b.ReportMetric(float64(c.busy.Load()), "busy-retries")
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkSessionLock measures the session lock on its own: taking and
// releasing it with nobody else wanting it (what every turn pays), and
// two stores (two replicas' pools) taking it in turn on one session,
// where each take waits for the other's release (what a turn pays when
// the session's previous turn ran on another replica).
func BenchmarkSessionLock(b *testing.B) {
	ctx := context.Background()
	u := pgtest.URL(b)
	open := func() *pgstore.Store {
		st, err := pgstore.Open(ctx, u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}
	key := store.Key{Agent: "bench", ID: "lock"}
	lockUnlock := func(st *pgstore.Store) {
		unlock, err := st.Lock(ctx, key)
		if err != nil {
			b.Error(err)
			return
		}
		unlock()
	}
	b.Run("uncontended", func(b *testing.B) {
		st := open()
		for b.Loop() {
			lockUnlock(st)
		}
	})
	b.Run("two-replicas", func(b *testing.B) {
		stores := []*pgstore.Store{open(), open()}
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for _, st := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(b.N) {
					lockUnlock(st)
				}
			}()
		}
		wg.Wait()
	})
}
