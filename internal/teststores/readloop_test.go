package teststores_test

import (
	"context"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkReadLoop reads the whole of a 10,000-entry session b.N times
// from each store, filled once in batches: a profile of it (-cpuprofile)
// is the read alone, as BenchmarkFullRead's figure is.
func BenchmarkReadLoop(b *testing.B) {
	for _, name := range []string{"file", "sqlite", "postgres", "redis"} {
		b.Run(name, func(b *testing.B) {
			s := teststores.All()[name](b)
			key := store.Key{Agent: "bench", ID: "full"}
			fillBatches(b, s, key, 10_000)
			b.ReportAllocs()
			defer benchdata.CPUMetric(b)()
			for b.Loop() {
				entries, err := s.Read(b.Context(), key)
				if err != nil || len(entries) != 10_000 {
					b.Fatalf("Read: %d entries, %v", len(entries), err)
				}
			}
		})
	}
}

// fillBatches appends n entries of the shared data set to a session, 500
// at a time with the store's batch capability when it has one.
func fillBatches(b *testing.B, s store.Store, key store.Key, n int) {
	ba, ok := s.(store.BatchAppender)
	if !ok {
		fill(b, s, key, n)
		return
	}
	g := benchdata.NewGen(7)
	ctx := context.Background()
	for i := 0; i < n; i += 500 {
		batch := make([]transcript.Entry, 0, 500)
		for j := i; j < min(i+500, n); j++ {
			batch = append(batch, g.Next(benchdata.Base.Add(time.Duration(j)*time.Millisecond), false))
		}
		if err := ba.AppendBatch(ctx, key, batch); err != nil {
			b.Fatal(err)
		}
	}
}
