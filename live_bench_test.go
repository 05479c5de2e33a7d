package spool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/filestore"
)

// liveReplicas returns two handles on one store of each kind, as two
// replicas have them.
func liveReplicas(b *testing.B, name string) (store.Store, store.Store) {
	switch name {
	case "memory":
		st := teststores.All()["memory"](b)
		return st, st
	case "file":
		dir := b.TempDir()
		var out [2]store.Store
		for i := range out {
			st, err := filestore.New(context.Background(), dir, filestore.WithRetention(store.Retention{}))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			out[i] = st
		}
		return out[0], out[1]
	}
	u := teststores.PostgresURL(b)
	var out [2]store.Store
	for i := range out {
		st, err := store.Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close(st) })
		out[i] = st
	}
	return out[0], out[1]
}

// BenchmarkLiveLatency: a turn of 40 deltas, 5 ms apart, runs on one
// replica; w watchers follow it on the other (memory: two agents on one
// store's hub; file: two file stores on one directory, through their
// Unix domain sockets; postgres: two stores on one schema,
// LISTEN/NOTIFY). Reported: the latency from each event as the running
// replica's stream has it to each watcher on the other replica, p50 and
// p99, the
// process's CPU per event delivered to a watcher, and the turn's time
// with the watchers against none (turn-x).
func BenchmarkLiveLatency(b *testing.B) {
	for _, name := range []string{"memory", "file", "postgres"} {
		for _, w := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/watchers=%d", name, w), func(b *testing.B) { benchLive(b, name, w) })
		}
	}
}

func benchLive(b *testing.B, name string, watchers int) {
	st1, st2 := liveReplicas(b, name)
	model := echo.New(echo.WithDelay(5 * time.Millisecond))
	one, err := spool.New(spool.Config{Store: st1, Model: model, MaxSessionWatchers: 1000, MaxWatchers: 1000})
	if err != nil {
		b.Fatal(err)
	}
	two, err := spool.New(spool.Config{Store: st2, Model: model, MaxSessionWatchers: 1000, MaxWatchers: 1000})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	prompt := strings.Repeat("word ", 38)
	var lat []float64
	var withW, without []float64
	var cpu time.Duration
	delivered := 0
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("live-%d", i)
		// A turn with nobody watching, for the ratio.
		bare, _ := one.Session(ctx, id+"-bare")
		start := time.Now()
		if _, err := bare.Send(ctx, prompt); err != nil {
			b.Fatal(err)
		}
		without = append(without, time.Since(start).Seconds())

		sess, _ := one.Session(ctx, id)
		other, _ := two.Session(ctx, id)
		wctx, cancel := context.WithCancel(ctx)
		var mu sync.Mutex
		seen := make([]map[string]time.Time, watchers)
		var ready, done sync.WaitGroup
		for k := range watchers {
			ready.Add(1)
			done.Add(1)
			seen[k] = map[string]time.Time{}
			go func() {
				defer done.Done()
				once := sync.OnceFunc(ready.Done)
				defer once()
				for ev, err := range other.Watch(wctx, spool.WatchOptions{Follow: true, Ready: once}) {
					if err != nil {
						return
					}
					key := ev.ID
					mu.Lock()
					seen[k][key] = time.Now()
					mu.Unlock()
					if ev.Kind == spool.EventTurnEnd {
						return
					}
				}
			}()
		}
		ready.Wait()
		sent := map[string]time.Time{}
		cpu0 := benchdata.CPU()
		start = time.Now()
		for ev, err := range sess.Stream(ctx, prompt) {
			if err != nil {
				b.Fatal(err)
			}
			key := ev.ID
			sent[key] = time.Now()
		}
		withW = append(withW, time.Since(start).Seconds())
		done.Wait()
		cpu += benchdata.CPU() - cpu0
		cancel()
		for k := range watchers {
			for key, at := range seen[k] {
				if t0, ok := sent[key]; ok {
					lat = append(lat, float64(at.Sub(t0).Microseconds())/1e3)
				}
				delivered++
			}
		}
	}
	benchdata.ReportLive(b, lat, cpu, delivered, withW, without)
}
