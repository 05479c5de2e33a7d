package spool_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// stores the runtime benchmarks run on.
var benchStores = map[string]func(b *testing.B) store.Store{
	"memstore":  func(b *testing.B) store.Store { return memstore.New() },
	"filestore": func(b *testing.B) store.Store { return teststores.File(b) },
}

// BenchmarkTurn measures the runtime's own cost per turn: one Send with
// the echo model (three appends: prompt, answer, turn end).
func BenchmarkTurn(b *testing.B) {
	for name, newStore := range benchStores {
		b.Run(name, func(b *testing.B) {
			ctx := b.Context()
			a, _ := spool.New(spool.Config{Model: echo.New(), Store: newStore(b)})
			s := session(b, a, ctx, "bench")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Send(ctx, "hello there, how are you today?"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewSessionTurn measures a session's first turn: the handle,
// its state and listener, and one Send, as a request that starts a
// session pays them (POST /invoke with a new id).
func BenchmarkNewSessionTurn(b *testing.B) {
	ctx := b.Context()
	a, _ := spool.New(spool.Config{Model: echo.New(), Store: memstore.New()})
	b.ReportAllocs()
	before := liveHeap()
	i := 0
	for b.Loop() {
		i++
		s := session(b, a, ctx, "new-"+strconv.Itoa(i))
		if _, err := s.Send(ctx, "hello there, how are you today?"); err != nil {
			b.Fatal(err)
		}
	}
	// What the process keeps of each session after its turn: the
	// transcript in the memory store, and the finished run that the hub
	// keeps for RecentTurn so that watchers can resume it.
	b.ReportMetric(float64(liveHeap()-before)/float64(i), "kept-B/session")
	runtime.KeepAlive(a)
}

// liveHeap returns the bytes of the heap's live objects.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSendLongSession compares Send on a session with 10 earlier
// turns and with 10,000: history building reads only the window, so the
// two should be close.
func BenchmarkSendLongSession(b *testing.B) {
	for name, newStore := range benchStores {
		for _, turns := range []int{10, 10000} {
			b.Run(fmt.Sprintf("%s/turns=%d", name, turns), func(b *testing.B) {
				ctx := b.Context()
				st := newStore(b)
				a, _ := spool.New(spool.Config{Model: echo.New(), Store: st})
				s := session(b, a, ctx, "long")
				benchdata.FillTurns(b, st, s.Key(), turns)
				if _, err := s.Send(ctx, "warm up"); err != nil { // loads the session once
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.Send(ctx, "and one more question"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTurnVsRaw times one turn on the file store (a Send with the
// echo model: the prompt, the answer and the turn's end appended, each
// durable) against its floor, three raw write+fdatasync of the same three
// lines to a file in the same folder, in interleaved blocks of 10, and
// reports the median ratio (issue 12's third row).
func BenchmarkTurnVsRaw(b *testing.B) {
	ctx := b.Context()
	root := b.TempDir()
	st, err := filestore.New(b.Context(), root, filestore.WithRetention(store.Retention{}))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	a, _ := spool.New(spool.Config{Model: echo.New(), Store: st})
	s, _ := a.Session(ctx, "bench")
	if _, err := s.Send(ctx, "warm up"); err != nil {
		b.Fatal(err)
	}
	entries, _ := st.Read(ctx, s.Key())
	var lines [][]byte
	for _, e := range entries {
		line, _ := transcript.AppendLine(nil, e)
		lines = append(lines, line)
	}
	raw, err := os.OpenFile(filepath.Join(root, "default", "raw.bin"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	const block = 10
	var turns, raws []benchdata.Phase
	for b.Loop() {
		t, r := benchdata.AB(1, func() benchdata.Phase {
			return benchdata.Measure(func() int {
				for range block {
					if _, err := s.Send(ctx, "hello there, how are you today?"); err != nil {
						b.Fatal(err)
					}
				}
				return block
			})
		}, func() benchdata.Phase {
			return benchdata.Measure(func() int {
				for range block {
					for _, line := range lines {
						raw.Write(line)
						if err := benchdata.SyncData(raw); err != nil {
							b.Fatal(err)
						}
					}
				}
				return block
			})
		})
		turns, raws = append(turns, t...), append(raws, r...)
	}
	perOp := func(p benchdata.Phase) float64 { return float64(p.Wall.Nanoseconds()) / float64(p.Ops) }
	b.ReportMetric(benchdata.Medians(turns, perOp), "turn-ns")
	b.ReportMetric(benchdata.Medians(raws, perOp), "raw3-ns")
	b.ReportMetric(benchdata.Median(benchdata.Ratios(turns, raws, perOp)), "turn/raw")
}
