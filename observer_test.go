package spool_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// TestContentNeverReachesObserversOrLogs sends a unique secret through the
// prompt, the answer, tool arguments and tool results, and checks that no
// observed event and no log line holds it.
func TestContentNeverReachesObserversOrLogs(t *testing.T) {
	ctx := context.Background()
	const secret = "s3cr3t-7f1e9a"
	var mu sync.Mutex
	var seen []spool.Observation
	obs := spool.ObserverFunc(func(ctx context.Context, o spool.Observation) {
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	type args struct {
		Text string `json:"text"`
	}
	echoTool := tool.New("repeat", "Repeats.", func(ctx context.Context, a args) (string, error) {
		return "result " + a.Text + " " + secret, nil
	}, tool.RequireApproval())
	a := newAgent(t, spool.Config{Observers: []spool.Observer{obs}, Logger: logger, Tools: []*tool.Tool{echoTool}})
	s, _ := a.Session(ctx, "obs")
	res, err := s.Send(ctx, fmt.Sprintf(`/call repeat {"text":%q}`, secret))
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ScopeOnce)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.Text, secret) {
		t.Fatal("the secret did not go through the turn; the test proves nothing")
	}
	if _, err := s.Send(ctx, "say "+secret); err != nil {
		t.Fatal(err)
	}
	kinds := map[spool.ObservationKind]int{}
	for _, o := range seen {
		kinds[o.Kind]++
		if s := fmt.Sprintf("%+v", o); strings.Contains(s, secret) {
			t.Fatalf("observation holds content: %s", s)
		}
	}
	for _, k := range []spool.ObservationKind{spool.ObserveTurnStart, spool.ObserveTurnEnd, spool.ObserveModelStart,
		spool.ObserveModelEnd, spool.ObserveToolStart, spool.ObserveToolEnd, spool.ObserveApproval} {
		if kinds[k] == 0 {
			t.Errorf("no %s observed", k)
		}
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged; the log check proves nothing")
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("log holds content:\n%s", logs.String())
	}
	for _, o := range seen {
		if o.Kind == spool.ObserveTurnEnd && (o.Status == "" || o.Usage.OutputTokens == 0) {
			t.Fatalf("turn end observation lacks status or usage: %+v", o)
		}
		if o.Kind == spool.ObserveToolEnd && (o.Tool != "repeat" || o.Outcome != spool.OutcomeOK) {
			t.Fatalf("tool end %+v", o)
		}
	}
}
