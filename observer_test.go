package spool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

// TestContentNeverReachesObserversOrLogs sends a unique secret through the
// prompt, the answer, tool arguments and tool results, and checks that no
// observed event and no log line holds it.
func TestContentNeverReachesObserversOrLogs(t *testing.T) {
	ctx := t.Context()
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
	s := session(t, a, ctx, "obs")
	res, err := s.Send(ctx, fmt.Sprintf(`/call repeat {"text":%q}`, secret))
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce)
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
			t.Fatalf("observation holds content: %s, want none", s)
		}
	}
	for _, k := range []spool.ObservationKind{spool.ObserveTurnStart, spool.ObserveTurnEnd, spool.ObserveModelStart,
		spool.ObserveModelEnd, spool.ObserveToolStart, spool.ObserveToolEnd, spool.ObserveApproval} {
		if kinds[k] == 0 {
			t.Errorf("no %s observed, want at least one", k)
		}
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged; the log check proves nothing")
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("log holds content, want none:\n%s", logs.String())
	}
	for _, o := range seen {
		if o.Kind == spool.ObserveTurnEnd && (o.Status == "" || o.Usage.OutputTokens == 0) {
			t.Fatalf("turn end observation %+v, want a status and usage", o)
		}
		if o.Kind == spool.ObserveToolEnd && (o.Tool != "repeat" || o.Outcome != spool.OutcomeOK) {
			t.Fatalf("tool end %+v, want repeat with outcome ok", o)
		}
	}
}

// TestObservationsPair: every end an observer sees follows its start,
// also for tool calls that never ran: denied, naming no tool, or made
// while tools were off (the Observer contract).
func TestObservationsPair(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	var seen []spool.Observation
	obs := spool.ObserverFunc(func(ctx context.Context, o spool.Observation) {
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
	})
	guarded := tool.New("guarded", "Needs a person.", func(ctx context.Context, _ struct{}) (string, error) {
		return "ran", nil
	}, tool.RequireApproval())
	// A model that calls the tool its prompt names, offered or not, and
	// answers in text once it has a result.
	calls := echo.New(echo.WithScript(func(req *model.Request) []model.Event {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return []model.Event{{Kind: model.EventText, Text: "done"}}
		}
		return []model.Event{{Kind: model.EventToolCall, ToolCall: transcript.ToolCall{Name: last.Content}}}
	}))
	fs := &failingStore{plainStore: plainStore{memstore.New()}}
	a := newAgent(t, spool.Config{Store: fs, Model: calls, Observers: []spool.Observer{obs}, Tools: []*tool.Tool{guarded}})
	s, err := a.Session(ctx, "pairs")
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	if _, err := s.Send(ctx, "no_such_tool"); err != nil {
		t.Fatalf("Send of a call to an unknown tool: %v", err)
	}
	res, err := s.Send(ctx, "guarded")
	if err != nil || len(res.Pending) != 1 {
		t.Fatalf("Send of a guarded call = %+v, %v; want one pending approval", res, err)
	}
	// A decision the store cannot record leaves the turn paused: it did
	// not start again, so it has no start to end.
	fs.fail.Store(true)
	if _, err := s.Deny(ctx, res.Pending[0].ID, "no"); !errors.Is(err, errDisk) {
		t.Fatalf("Deny while the store fails = %v, want the store's error", err)
	}
	fs.fail.Store(false)
	if _, err := s.Deny(ctx, res.Pending[0].ID, "no"); err != nil {
		t.Fatalf("Deny: %v", err)
	}
	if err := s.SetToolMode(ctx, transcript.ToolModeOff); err != nil {
		t.Fatalf("SetToolMode(off): %v", err)
	}
	if _, err := s.Send(ctx, "guarded"); err != nil {
		t.Fatalf("Send with tools off: %v", err)
	}

	open := map[string]bool{}
	outcomes := map[spool.Outcome]int{}
	for i, o := range seen {
		switch o.Kind {
		case spool.ObserveTurnStart:
			if open["turn/"+o.TurnID] {
				t.Errorf("observation %d, turn %s starts again before it ended", i, o.TurnID)
			}
			open["turn/"+o.TurnID] = true
		case spool.ObserveModelStart:
			open["model/"+o.TurnID] = true
		case spool.ObserveToolStart:
			open["tool/"+o.TurnID+"/"+o.CallID] = true
		case spool.ObserveTurnEnd, spool.ObserveModelEnd, spool.ObserveToolEnd:
			key := map[spool.ObservationKind]string{
				spool.ObserveTurnEnd:  "turn/" + o.TurnID,
				spool.ObserveModelEnd: "model/" + o.TurnID,
				spool.ObserveToolEnd:  "tool/" + o.TurnID + "/" + o.CallID,
			}[o.Kind]
			if !open[key] {
				t.Errorf("observation %d, %s (%s, outcome %q), has no start before it", i, o.Kind, o.Tool, o.Outcome)
			}
			delete(open, key)
			if o.Kind == spool.ObserveToolEnd {
				outcomes[o.Outcome]++
			}
		}
	}
	if len(open) != 0 {
		t.Errorf("starts without an end: %v", open)
	}
	// The unknown tool and the call with tools off are errors; the denied
	// call is a denial. Without them the test checks nothing.
	if outcomes[spool.OutcomeError] != 2 || outcomes[spool.OutcomeDenied] != 1 {
		t.Errorf("tool outcomes = %v, want 2 %s and 1 %s", outcomes, spool.OutcomeError, spool.OutcomeDenied)
	}
}
