package benchdata

import "testing"

// CPUMetric starts counting the process's CPU time, user and system; the
// function it returns reports it per operation as cpu-ns/op. On a machine
// shared with other work, CPU time varies far less than wall time. It
// counts this process only: a server's work (Postgres, Redis) is not in it.
// Where the platform has no getrusage it reports nothing.
func CPUMetric(b *testing.B) (report func()) {
	start := cpuNanos()
	return func() {
		if start > 0 {
			b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
