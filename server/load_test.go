package server_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/transcript"
)

// A bounded load over loopback: 200 concurrent requests over 20 sessions,
// half /invoke and half /chat, leave 20 well-formed transcripts with every
// turn present once.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	e := newEnv(t, spool.Config{}, server.Options{})
	const sessions, perSession = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession)
	for i := range sessions * perSession {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("load-%d", i%sessions)
			prompt := fmt.Sprintf("request %d", i)
			var r resp
			if i%2 == 0 {
				r = e.post("/invoke", map[string]any{"prompt": prompt, "sessionId": sid})
			} else {
				r = e.post("/chat", map[string]any{"text": prompt, "sessionId": sid})
			}
			var res spool.Result
			if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 || res.Text != "echo: "+prompt {
				errs <- fmt.Errorf("request %d: %d %s", i, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := range sessions {
		entries := e.transcriptOf("", fmt.Sprintf("load-%d", s))
		checkWellFormed(t, entries)
		got := userTexts(t, entries)
		var want []string
		for i := s; i < sessions*perSession; i += sessions {
			want = append(want, fmt.Sprintf("request %d", i))
		}
		sort.Strings(got)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("session %d holds %v, want %v", s, got, want)
		}
		for _, st := range turnEnds(entries) {
			if st != transcript.StatusOK {
				t.Fatalf("session %d: a turn ended %s", s, st)
			}
		}
		if len(turnEnds(entries)) != perSession {
			t.Fatalf("session %d: %d turn ends", s, len(turnEnds(entries)))
		}
	}
}
