package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
	"github.com/spool-go/spool/telemetry"
)

// With providers, every request has a server span named by its route
// (never the raw path), and the turn it runs is its child, on every route
// that runs turns: /invoke, /chat (through the channel's queue), the
// approval route and /api/chat. The server's metrics are labelled by
// route and status.
func TestServerSpansParentTurns(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := telemetry.NewObserver(tp, mp)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, spool.Config{Observers: []spool.Observer{obs}}, server.Options{TracerProvider: tp, MeterProvider: mp})
	e.post("/invoke", map[string]any{"prompt": "hi", "sessionId": "sp-1"})
	e.stream("/chat", map[string]any{"text": "hi", "sessionId": "sp-2"})
	var res spool.Result
	e.post("/invoke", map[string]any{"prompt": `/call save_note {"text":"x"}`, "sessionId": "sp-3"}).json(t, &res)
	e.post("/v1/sessions/sp-3/approvals/"+res.Pending[0].ID, map[string]any{"decision": "allow"})
	e.post("/api/chat", map[string]any{"id": "sp-4", "messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi"}}}}})
	e.get("/v1/sessions/sp-1")
	e.get("/healthz")

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
		if strings.Contains(s.Name(), "sp-") {
			t.Errorf("span named by the raw path: %s", s.Name())
		}
		if s.Name() == "GET /healthz" {
			t.Error("probes make spans")
		}
	}
	parents := map[string]int{}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name(), "invoke_agent") {
			continue
		}
		p, ok := byID[s.Parent().SpanID()]
		if !ok || p.SpanKind() != trace.SpanKindServer {
			t.Fatalf("turn span %s has no server span as parent", s.Name())
		}
		route := ""
		for _, a := range p.Attributes() {
			if a.Key == "http.route" {
				route = a.Value.AsString()
			}
		}
		if "POST "+route != p.Name() {
			t.Errorf("server span %q has http.route %q", p.Name(), route)
		}
		parents[p.Name()]++
	}
	for _, want := range []string{"POST /invoke", "POST /chat", "POST /v1/sessions/{id}/approvals/{approvalId}", "POST /api/chat"} {
		if parents[want] == 0 {
			t.Errorf("no turn under %s (turns under %v)", want, parents)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	routes := map[string]bool{}
	streams := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "http.server.request.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					r, _ := dp.Attributes.Value("http.route")
					st, _ := dp.Attributes.Value("http.response.status_code")
					routes[r.AsString()+" "+st.String()] = true
				}
			case "spool.server.active_streams":
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					r, _ := dp.Attributes.Value("http.route")
					if r.AsString() == "/chat" && dp.Value == 0 {
						streams = true // opened, and closed again
					}
				}
			}
		}
	}
	for _, want := range []string{"/invoke 200", "/chat 200", "/v1/sessions/{id} 200", "/api/chat 200"} {
		if !routes[want] {
			t.Errorf("no request metric for %s (got %v)", want, routes)
		}
	}
	if !streams {
		t.Error("spool.server.active_streams did not count the /chat stream")
	}
}

// Options.Metrics is served at GET /metrics behind the keys like the API.
func TestMetricsRoute(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write([]byte("# HELP up 1\nup 1\n"))
	})
	e := newEnv(t, spool.Config{}, server.Options{Keys: mustKeys(t), Metrics: metrics})
	if r := e.get("/metrics"); r.status != 401 {
		t.Fatalf("/metrics without a key: %d", r.status)
	}
	e.key = "project-key-0123456789"
	if r := e.get("/metrics"); r.status != 200 || !strings.Contains(string(r.body), "up 1") {
		t.Fatalf("/metrics: %d %s", r.status, r.body)
	}
	plain := newEnv(t, spool.Config{}, server.Options{})
	if r := plain.get("/metrics"); r.status != 404 {
		t.Fatalf("/metrics without Options.Metrics: %d", r.status)
	}
}
