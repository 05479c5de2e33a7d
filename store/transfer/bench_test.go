package transfer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store/transfer"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkImport imports an export into every store, as spool sessions
// import does (spool migrate copies through the same sink): 3,000 sessions
// of 13 or 14 entries, 40,000 entries in all, and one session of 30,000
// entries (issue 12's last row). It reports entries per second for each.
// Run it with -benchtime 1x; the stores that need a server take it from
// SPOOL_TEST_POSTGRES and SPOOL_TEST_REDIS.
func BenchmarkImport(b *testing.B) {
	// The test binary's chunk is 7 entries (export_test.go), which would
	// hand every store bulks of 7 entries and a sync per 7.
	defer transfer.SetChunk(transfer.RealChunk)()
	many := export(b, 3000, 40_000)
	one := export(b, 1, 30_000)
	for _, name := range []string{"file", "sqlite", "postgres", "redis"} {
		b.Run(name, func(b *testing.B) {
			var rateMany, rateOne float64
			for b.Loop() {
				rateMany = importRate(b, name, many, 40_000)
				rateOne = importRate(b, name, one, 30_000)
			}
			b.ReportMetric(rateMany, "entries/s")
			b.ReportMetric(rateOne, "one-session-entries/s")
		})
	}
}

func importRate(b *testing.B, name string, export []byte, want int) float64 {
	dst := teststores.All()[name](b)
	start := time.Now()
	st, err := transfer.Import(b.Context(), dst, bytes.NewReader(export), nil)
	if err != nil || st.Entries != want {
		b.Fatalf("Import into %s: %+v %v", name, st, err)
	}
	return float64(st.Entries) / time.Since(start).Seconds()
}

// export returns the export lines of sessions holding total entries of
// the shared data set between them.
func export(b *testing.B, sessions, total int) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for j := range sessions {
		g := benchdata.NewGen(uint64(1000 + j))
		n := total / sessions
		if j < total%sessions {
			n++
		}
		var e transcript.Entry
		for i := range n {
			e = g.Next(benchdata.Base.Add(time.Duration(i*sessions+j)*time.Millisecond), false)
			if err := enc.Encode(transfer.Record{Agent: "import", Session: fmt.Sprint("s", j), Entry: e}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return buf.Bytes()
}
