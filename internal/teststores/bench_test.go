package teststores_test

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
)

// BenchmarkFullRead reads the whole of a 10,000-entry session (300-byte
// entries of the shared data set) from every store, and reports the
// median of 7 reads in milliseconds (issue 12's tenth row). Run it with
// -benchtime 1x; the stores that need a server take it from
// SPOOL_TEST_POSTGRES and SPOOL_TEST_REDIS.
func BenchmarkFullRead(b *testing.B) {
	for _, name := range []string{"file", "sqlite", "postgres", "redis", "memory"} {
		b.Run(name, func(b *testing.B) {
			s := teststores.All()[name](b)
			key := store.Key{Agent: "bench", ID: "full"}
			fill(b, s, key, 10_000)
			var reads []benchdata.Phase
			for b.Loop() {
				for range 7 {
					reads = append(reads, benchdata.Measure(func() int {
						entries, err := s.Read(b.Context(), key)
						if err != nil || len(entries) != 10_000 {
							b.Fatalf("Read: %d entries, %v", len(entries), err)
						}
						return 1
					}))
				}
			}
			b.ReportMetric(benchdata.Medians(reads, func(p benchdata.Phase) float64 { return float64(p.Wall.Microseconds()) / 1e3 }), "read-ms")
			b.ReportMetric(benchdata.Medians(reads, func(p benchdata.Phase) float64 { return float64(p.CPU.Microseconds()) / 1e3 }), "cpu-ms")
		})
	}
}

// fill appends n entries of the shared data set to a session, with the
// store's bulk capability when it has one.
func fill(b *testing.B, s store.Store, key store.Key, n int) {
	g := benchdata.NewGen(7)
	ctx := context.Background()
	for i := range n {
		if err := s.Append(ctx, key, g.Next(benchdata.Base.Add(time.Duration(i)*time.Millisecond), false)); err != nil {
			b.Fatal(err)
		}
	}
}
