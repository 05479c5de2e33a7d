package benchdata

import (
	"runtime"
	"testing"
)

// CPUMetric starts counting the process's CPU time, user and system; the
// function it returns reports it per operation as cpu-ns/op. On a machine
// shared with other work, CPU time varies far less than wall time. It
// counts this process only: a server's work (Postgres, Redis) is not in it.
// It collects garbage first, so that collecting what came before (loading
// a data set) is not counted. Where the platform has no getrusage it
// reports nothing.
func CPUMetric(b *testing.B) (report func()) {
	runtime.GC()
	start := cpuNanos()
	return func() {
		if start > 0 {
			b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
