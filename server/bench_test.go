package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// BenchmarkInvokeVsBare measures POST /invoke with the echo model on the
// memory store against a bare net/http handler that decodes the same JSON
// and answers the same shape, side by side: 16 clients in this process,
// over loopback, with keep-alive; rounds of spool and bare interleaved. So
// what is left is what spool adds to serving a request: the session, its
// history, three appends, the model's stream, the answer.
//
// long: 16 sessions, one per client, each with 1,000 earlier turns. new:
// every request starts a session. It reports the median ratio of the
// request rates (spool/bare) and each side's CPU time per request (this
// process: server and clients).
//
//	go test -run '^$' -bench InvokeVsBare -benchtime 1x ./server/
func BenchmarkInvokeVsBare(b *testing.B) {
	for _, c := range []struct {
		name string
		long bool
	}{{"long", true}, {"new", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				invokeVsBare(b, c.long)
			}
		})
	}
}

const (
	benchClients = 16
	benchRound   = time.Second
	benchRounds  = 7
)

func invokeVsBare(b *testing.B, long bool) {
	st := memstore.New()
	a, err := spool.New(spool.Config{Model: echo.New(), Store: st})
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	spoolSrv := httptest.NewServer(server.New(a, server.Options{Logger: quiet}))
	defer spoolSrv.Close()
	bareSrv := httptest.NewServer(http.HandlerFunc(bareInvoke))
	defer bareSrv.Close()
	if long {
		for w := range benchClients {
			benchdata.FillTurns(b, st, store.Key{Agent: "default", ID: fmt.Sprint("long-", w)}, 1000)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
	var seq atomic.Int64
	load := func(url string) benchdata.Phase {
		return benchdata.Measure(func() int {
			deadline := time.Now().Add(benchRound)
			var n atomic.Int64
			var wg sync.WaitGroup
			for w := range benchClients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(deadline) {
						sid := fmt.Sprint("long-", w)
						if !long {
							sid = fmt.Sprint("new-", seq.Add(1))
						}
						body, _ := json.Marshal(map[string]string{"prompt": "Where is my order 1042? It was due on Friday.", "sessionId": sid})
						resp, err := client.Post(url+"/invoke", "application/json", bytes.NewReader(body))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
						n.Add(1)
					}
				}()
			}
			wg.Wait()
			return int(n.Load())
		})
	}
	load(spoolSrv.URL) // warm up: load the long sessions' states
	load(bareSrv.URL)
	sp, bare := benchdata.AB(benchRounds, func() benchdata.Phase { return load(spoolSrv.URL) }, func() benchdata.Phase { return load(bareSrv.URL) })
	b.ReportMetric(benchdata.Median(benchdata.Ratios(sp, bare, benchdata.Phase.Rate)), "spool/bare")
	b.ReportMetric(benchdata.Medians(sp, benchdata.Phase.Rate), "spool-req/s")
	b.ReportMetric(benchdata.Medians(bare, benchdata.Phase.Rate), "bare-req/s")
	b.ReportMetric(benchdata.Medians(sp, cpuPerOpMicros), "spool-cpu-µs/req")
	b.ReportMetric(benchdata.Medians(bare, cpuPerOpMicros), "bare-cpu-µs/req")
}

func cpuPerOpMicros(p benchdata.Phase) float64 { return float64(p.CPUPerOp().Nanoseconds()) / 1e3 }

// bareInvoke is the anchor: decode the request, answer its shape.
func bareInvoke(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt    string `json:"prompt"`
		SessionID string `json:"sessionId"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.Prompt == "" {
		http.Error(w, `{"error":{"code":"bad_request","message":"prompt"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"sessionId": req.SessionID, "turnId": transcript.NewID(time.Now()), "status": "ok",
		"text": "echo: " + req.Prompt, "usage": map[string]int{"inputTokens": 10, "outputTokens": 10},
	})
}
