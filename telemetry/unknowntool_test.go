package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/transcript"
)

// A call naming no tool of the agent carries a name the model wrote (a
// prompt can make it write anything, the user's text included): it names
// no span and labels no metric, which would also have one series per
// name it invents. The call is still measured, as a failed tool call.
func TestUnknownToolNameNotRecorded(t *testing.T) {
	ctx := context.Background()
	const secret = "zebra-4417-secret"
	rec, reader, obs := recordingObserver(t)
	m := echo.New(echo.WithResponses([]model.Event{{Kind: model.EventToolCall,
		ToolCall: transcript.ToolCall{ID: "call_1", Name: secret, Arguments: []byte(`{}`)}}}))
	agent, err := spool.New(spool.Config{Model: m, Store: memstore.New(), Observers: []spool.Observer{obs}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := agent.Session(ctx, "ses-unknown")
	if _, err := s.Send(ctx, "call something"); err != nil {
		t.Fatal(err)
	}

	tools := 0
	for _, sp := range rec.Ended() {
		dump := fmt.Sprintf("%v %v %v", sp.Name(), sp.Attributes(), sp.Events())
		if strings.Contains(dump, secret) {
			t.Errorf("span holds the model's tool name: %s", dump)
		}
		if strings.HasPrefix(sp.Name(), "execute_tool") {
			tools++
			if a := attrs(sp.Attributes()); a["spool.tool.outcome"] != "error" {
				t.Errorf("unknown tool's span %v", a)
			}
		}
	}
	if tools != 1 {
		t.Errorf("%d tool spans, want 1", tools)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	measured := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if strings.Contains(fmt.Sprintf("%+v", m.Data), secret) {
				t.Errorf("metric %s is labelled with the model's tool name", m.Name)
			}
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "spool.tool.duration" {
				for _, dp := range h.DataPoints {
					if v, _ := dp.Attributes.Value("spool.tool.outcome"); v.AsString() == "error" && dp.Count == 1 {
						measured = true
					}
				}
			}
		}
	}
	if !measured {
		t.Error("the unknown tool's call is not in spool.tool.duration")
	}
}
