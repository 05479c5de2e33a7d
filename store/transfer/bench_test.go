package transfer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/durable"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/store/transfer"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkImport imports an export into every store, as spool sessions
// import does (spool migrate copies through the same sink): 3,000 sessions
// of 13 or 14 entries, 40,000 entries in all, and one session of 30,000
// entries (issue 12's last row). It reports entries per second for each,
// and for the file store the disk's floor for the 3,000 sessions, measured
// before and after its import (fileFloor).
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
			var floors []float64
			for b.Loop() {
				if name == "file" {
					floors = append(floors, fileFloor(b, len(many), 3000, 40_000))
				}
				rateMany = importRate(b, name, many, 40_000)
				rateOne = importRate(b, name, one, 30_000)
				if name == "file" {
					floors = append(floors, fileFloor(b, len(many), 3000, 40_000))
				}
			}
			if len(floors) > 0 {
				b.ReportMetric(benchdata.Median(floors), "floor-entries/s")
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

// fileFloor is what the disk allows an import of new sessions into the
// file store: it creates a file for each of sessions, writes it its share
// of size bytes and syncs its data, 8 at a time as the file store's
// AppendBulk does, then syncs the folder once (the same durable calls). It returns entries (of total) a second.
func fileFloor(b *testing.B, size, sessions, total int) float64 {
	dir := b.TempDir()
	data := make([]byte, size/sessions)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for i := range next {
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
				if err == nil {
					_, err = f.Write(data)
				}
				if err == nil {
					err = durable.SyncData(f)
				}
				if err == nil {
					err = f.Close()
				}
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range sessions {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := durable.SyncDir(dir); err != nil {
		b.Fatal(err)
	}
	return float64(total) / time.Since(start).Seconds()
}
