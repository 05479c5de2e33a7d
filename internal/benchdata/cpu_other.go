//go:build !unix

package benchdata

func cpuNanos() int64 { return 0 }
