package benchdata

import (
	"slices"
	"time"
)

// CPU returns the CPU time the process has used so far, user and system
// (zero where the platform cannot tell).
func CPU() time.Duration { return time.Duration(cpuNanos()) }

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Phase is what one side of an A/B measure did in one round.
type Phase struct {
	Ops  int           // operations done
	Wall time.Duration // how long they took
	CPU  time.Duration // the process's CPU time meanwhile
}

// Rate is operations per second.
func (p Phase) Rate() float64 { return float64(p.Ops) / p.Wall.Seconds() }

// CPUPerOp is the process's CPU time per operation.
func (p Phase) CPUPerOp() time.Duration {
	if p.Ops == 0 {
		return 0
	}
	return p.CPU / time.Duration(p.Ops)
}

// Measure runs fn, which does some operations and returns how many, and
// times it by the wall and by the process's CPU.
func Measure(fn func() int) Phase {
	cpu, start := CPU(), time.Now()
	n := fn()
	return Phase{Ops: n, Wall: time.Since(start), CPU: CPU() - cpu}
}

// AB runs a and b in rounds, interleaved (a then b, then b then a, so that
// neither always goes first), and returns every round's phases: the way to
// compare two things on a machine whose speed changes from one second to
// the next. A round is usually a Phase; P lets a benchmark keep other
// figures of its rounds (a database's CPU, round trips).
func AB[P any](rounds int, a, b func() P) (as, bs []P) {
	for r := range rounds {
		if r%2 == 0 {
			as = append(as, a())
			bs = append(bs, b())
		} else {
			bs = append(bs, b())
			as = append(as, a())
		}
	}
	return as, bs
}

// Ratios returns f(as[i]) / f(bs[i]) for every round.
func Ratios(as, bs []Phase, f func(Phase) float64) []float64 {
	out := make([]float64, len(as))
	for i := range as {
		out[i] = f(as[i]) / f(bs[i])
	}
	return out
}

// Medians returns the median of f over phases.
func Medians(ps []Phase, f func(Phase) float64) float64 {
	xs := make([]float64, len(ps))
	for i, p := range ps {
		xs[i] = f(p)
	}
	return Median(xs)
}
