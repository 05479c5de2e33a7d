package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/model/echo"
	"github.com/spool-go/spool/store/memstore"
	"github.com/spool-go/spool/telemetry"
	"github.com/spool-go/spool/tool"
	"github.com/spool-go/spool/transcript"
)

func attrs(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// recordingObserver returns an Observer whose spans rec records and whose
// metrics reader reads.
func recordingObserver(t *testing.T) (*tracetest.SpanRecorder, *sdkmetric.ManualReader, *telemetry.Observer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	obs, err := telemetry.NewObserver(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return rec, reader, obs
}

func TestSpansAndMetrics(t *testing.T) {
	ctx := context.Background()
	const secret = "zebra-4417"
	rec, reader, obs := recordingObserver(t)
	type args struct {
		Text string `json:"text"`
	}
	note := tool.New("save_note", "Save.", func(ctx context.Context, a args) (string, error) {
		return "saved " + a.Text, nil
	}, tool.RequireApproval())
	agent, err := spool.New(spool.Config{Name: "support", Model: echo.New(), Store: memstore.New(),
		Tools: []*tool.Tool{note}, Observers: []spool.Observer{obs}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := agent.Session(ctx, "ses-1")
	res, err := s.Send(ctx, fmt.Sprintf(`/call save_note {"text":%q}`, secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(ctx, res.Pending[0].ID, transcript.ApprovalScopeOnce); err != nil {
		t.Fatal(err)
	}

	spans := rec.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
		dump := fmt.Sprintf("%v %v %v", sp.Name(), sp.Attributes(), sp.Events())
		if strings.Contains(dump, secret) {
			t.Fatalf("span holds content: %s", dump)
		}
	}
	turns := byName["invoke_agent support"]
	if len(turns) != 2 { // the call that paused, and the one that resumed
		t.Fatalf("turn spans: %d (%v)", len(turns), byName)
	}
	a := attrs(turns[0].Attributes())
	if a["gen_ai.operation.name"] != "invoke_agent" || a["gen_ai.conversation.id"] != "ses-1" || a["spool.turn.status"] != "awaiting_approval" {
		t.Fatalf("turn attributes %v", a)
	}
	if attrs(turns[1].Attributes())["spool.turn.status"] != "ok" {
		t.Fatalf("resumed turn %v", attrs(turns[1].Attributes()))
	}
	chats := byName["chat echo"]
	if len(chats) != 2 {
		t.Fatalf("model spans %d", len(chats))
	}
	for _, c := range chats {
		ca := attrs(c.Attributes())
		if ca["gen_ai.request.model"] != "echo" || ca["gen_ai.usage.output_tokens"] == "0" {
			t.Fatalf("chat attributes %v", ca)
		}
		if !c.Parent().IsValid() {
			t.Fatal("model span without a parent turn span")
		}
	}
	tools := byName["execute_tool save_note"]
	if len(tools) != 1 || attrs(tools[0].Attributes())["spool.tool.outcome"] != "ok" || tools[0].Parent().SpanID() != turns[1].SpanContext().SpanID() {
		t.Fatalf("tool spans %v", tools)
	}
	var approvals int
	for _, ev := range turns[1].Events() {
		if ev.Name == "spool.approval" && attrs(ev.Attributes)["spool.approval.decision"] == "allow" {
			approvals++
		}
	}
	if approvals != 1 {
		t.Fatalf("approval events %d", approvals)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
		}
	}
	if !found["gen_ai.client.token.usage"] || !found["gen_ai.client.operation.duration"] || !found["spool.turn.duration"] || !found["spool.tool.duration"] {
		t.Fatalf("metrics %v", found)
	}
}

// TestCompactionMetrics: a compaction's summarizer request is counted in
// the token and duration metrics, as operation compaction.
func TestCompactionMetrics(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	obs, err := telemetry.NewObserver(sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := spool.New(spool.Config{Model: echo.New(), Store: memstore.New(), Observers: []spool.Observer{obs}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := agent.Session(ctx, "long")
	for _, p := range []string{"one", "two"} {
		if _, err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Compact(ctx, spool.CompactOptions{KeepTurns: 1}); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[int64])
			if m.Name != "gen_ai.client.token.usage" || !ok {
				continue
			}
			for _, dp := range h.DataPoints {
				if v, _ := dp.Attributes.Value("gen_ai.operation.name"); v.AsString() == "compaction" && dp.Sum > 0 {
					return
				}
			}
		}
	}
	t.Fatal("no token usage of operation compaction")
}
