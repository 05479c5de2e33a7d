package benchdata

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/store"
)

// writers numbers the sessions AppendParallel writes to, across the whole
// process, so that a store shared by several runs of a benchmark never
// sees a session twice.
var writers atomic.Uint64

// AppendParallel is every store's AppendParallel measure: 4 writers per
// CPU, each appending to a session of its own of agent, as fast as the
// store lets it. It reports appends/s and cpu-ns/op.
func AppendParallel(b *testing.B, s store.Store, agent string) {
	b.SetParallelism(4)
	done := CPUMetric(b)
	b.RunParallel(func(pb *testing.PB) {
		w := writers.Add(1)
		key := store.Key{Agent: agent, ID: fmt.Sprint("w", w)}
		g := NewGen(100 + w)
		for i := 0; pb.Next(); i++ {
			if err := s.Append(b.Context(), key, g.Next(Base.Add(time.Duration(i)*time.Millisecond), false)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	done()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}
