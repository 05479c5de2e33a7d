package benchdata

import (
	"slices"
	"testing"
	"time"
)

// ReportLive reports the figures of issue 13's live benchmarks: the
// p50 and p99 of lat (milliseconds, one per delivery), the CPU per
// delivered event, and the median turn with watchers over the median
// turn without (turn-x).
func ReportLive(b *testing.B, lat []float64, cpu time.Duration, delivered int, with, without []float64) {
	if len(lat) == 0 {
		b.Fatal("no event reached a watcher")
	}
	lat = slices.Sorted(slices.Values(lat))
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(max(delivered, 1)), "cpu-us/event")
	b.ReportMetric(Median(with)/Median(without), "turn-x")
}
