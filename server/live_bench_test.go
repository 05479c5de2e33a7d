package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/internal/benchdata"
	"github.com/spool-go/spool/internal/teststores"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/store"
	"github.com/spool-go/spool/store/memstore"
)

// BenchmarkLiveSocket is issue 13's measure at the socket: two replicas
// (two servers on one store: one memstore, or two handles on one
// Postgres schema), a turn of 40 deltas 5 ms apart started with POST
// /chat on the first, and w clients following the session with GET
// /v1/sessions/{id}/events?follow=1 on the second, each on its own
// connection. Each round's session has had a turn before, then a turn
// nobody follows is timed, then one that the clients follow. Reported: the latency from each event as the first
// replica's /chat stream delivers it to the same event (by its id) read
// from each follower's socket, p50 and p99; the process's CPU (both
// replicas, the clients and the model: one process) per event delivered
// to a follower; and the turn's time with the followers over a turn
// with none (turn-x, goal ≤ 1.1x).
func BenchmarkLiveSocket(b *testing.B) {
	for _, name := range []string{"memory", "postgres"} {
		for _, w := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/watchers=%d", name, w), func(b *testing.B) { benchSocket(b, name, w) })
		}
	}
}

func benchSocket(b *testing.B, name string, watchers int) {
	var st1, st2 store.Store
	if name == "memory" {
		st := memstore.New()
		st1, st2 = st, st
	} else {
		u := teststores.PostgresURL(b)
		for _, p := range []*store.Store{&st1, &st2} {
			st, err := store.Open(context.Background(), u)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close(st) })
			*p = st
		}
	}
	model := echo.New(echo.WithDelay(5 * time.Millisecond))
	replica := func(st store.Store) *httptest.Server {
		a, err := spool.New(spool.Config{Store: st, Model: model, MaxSessionWatchers: 1000, MaxWatchers: 1000})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(server.New(a, server.Options{Logger: slog.New(slog.DiscardHandler)}))
		b.Cleanup(srv.Close)
		return srv
	}
	one, two := replica(st1), replica(st2)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: watchers + 2}}
	b.Cleanup(client.CloseIdleConnections)
	prompt := strings.Repeat("word ", 38)

	// chat runs a turn through POST /chat on the first replica, noting
	// when each event's id arrives.
	chat := func(id string, sent map[string]time.Time) {
		body, _ := json.Marshal(map[string]any{"sessionId": id, "text": prompt})
		req, _ := http.NewRequest("POST", one.URL+"/chat", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("POST /chat: %s", res.Status)
		}
		readIDs(res, func(ev, id string) bool {
			if sent != nil && id != "" {
				sent[id] = time.Now()
			}
			return ev != "turn_end"
		})
	}

	var lat, withW, without []float64
	var cpu time.Duration
	delivered := 0
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("socket-%d", i)
		chat(id, nil) // the session exists before anyone follows it
		start := time.Now()
		chat(id, nil)
		without = append(without, time.Since(start).Seconds())

		ctx, cancel := context.WithCancel(context.Background())
		seen := make([]map[string]time.Time, watchers)
		var ready, done sync.WaitGroup
		for k := range watchers {
			seen[k] = map[string]time.Time{}
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				req, _ := http.NewRequestWithContext(ctx, "GET", two.URL+"/v1/sessions/"+id+"/events?follow=1", nil)
				req.Header.Set("Accept", "text/event-stream")
				res, err := client.Do(req)
				ready.Done() // the server answers once the follower is registered
				if err != nil {
					return
				}
				defer res.Body.Close()
				readIDs(res, func(ev, eid string) bool {
					if eid != "" {
						seen[k][eid] = time.Now()
					}
					return ev != "turn_end"
				})
			}()
		}
		ready.Wait()
		sent := map[string]time.Time{}
		cpu0 := benchdata.CPU()
		start = time.Now()
		chat(id, sent)
		withW = append(withW, time.Since(start).Seconds())
		done.Wait()
		cpu += benchdata.CPU() - cpu0
		cancel()
		for k := range watchers {
			for eid, at := range seen[k] {
				if t0, ok := sent[eid]; ok {
					lat = append(lat, float64(at.Sub(t0).Microseconds())/1e3)
					delivered++
				}
			}
		}
	}
	benchdata.ReportLive(b, lat, cpu, delivered, withW, without)
}

// readIDs reads an event stream, calling fn with each event's name and
// id as it arrives, until fn returns false or the stream ends.
func readIDs(res *http.Response, fn func(event, id string) bool) {
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event, id string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if (event != "" || id != "") && !fn(event, id) {
				return
			}
			event, id = "", ""
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		}
	}
}
