package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/spool-go/spool/internal/spooltest"
)

// otlpReceiver is a local OTLP endpoint, over HTTP/protobuf or gRPC, that
// keeps what it is sent: the raw payloads (to look for content in them)
// and the decoded requests.
type otlpReceiver struct {
	mu      sync.Mutex
	raw     [][]byte
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest

	coltracepb.UnimplementedTraceServiceServer
}

// startHTTP serves POST /v1/traces and /v1/metrics and returns the
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT).
func (o *otlpReceiver) startHTTP(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want application/x-protobuf", http.StatusUnsupportedMediaType)
			return
		}
		var resp proto.Message
		switch r.URL.Path {
		case "/v1/traces":
			req := &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(b, req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			o.keep(b, req, nil)
			resp = &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			req := &colmetricpb.ExportMetricsServiceRequest{}
			if err := proto.Unmarshal(b, req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			o.keep(b, nil, req)
			resp = &colmetricpb.ExportMetricsServiceResponse{}
		default:
			http.NotFound(w, r)
			return
		}
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// startGRPC serves the OTLP trace and metrics services over gRPC.
func (o *otlpReceiver) startGRPC(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, o)
	colmetricpb.RegisterMetricsServiceServer(s, metricsService{otlpReceiver: o})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return "http://" + ln.Addr().String()
}

func (o *otlpReceiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	b, _ := proto.Marshal(req)
	o.keep(b, req, nil)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// metricsService is the receiver as the gRPC metrics service, whose
// method has the trace service's name.
type metricsService struct {
	*otlpReceiver
	colmetricpb.UnimplementedMetricsServiceServer
}

func (m metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	b, _ := proto.Marshal(req)
	m.keep(b, nil, req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

func (o *otlpReceiver) keep(raw []byte, tr *coltracepb.ExportTraceServiceRequest, mr *colmetricpb.ExportMetricsServiceRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.raw = append(o.raw, raw)
	if tr != nil {
		o.traces = append(o.traces, tr)
	}
	if mr != nil {
		o.metrics = append(o.metrics, mr)
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		default:
			m[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		}
	}
	return m
}

// With the standard OTEL_* variables, spool serve exports its spans and
// metrics over OTLP, HTTP/protobuf or gRPC: the HTTP server span (named by
// the route, continuing the client's trace) is the parent of the turn's
// spans; the resource carries OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES; a sampler that samples nothing is honoured;
// and no payload the receiver gets holds content.
func TestServeExportsOTLP(t *testing.T) {
	const secret = "zebra-4417-OTLP"
	cases := []struct {
		name, protocol, sampler string
	}{
		{"http", "http/protobuf", ""},
		{"grpc", "grpc", ""},
		{"sampled out", "http/protobuf", "always_off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := &otlpReceiver{}
			var endpoint string
			if c.protocol == "grpc" {
				endpoint = rec.startGRPC(t)
			} else {
				endpoint = rec.startHTTP(t)
			}
			env := []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL=" + c.protocol,
				"OTEL_SERVICE_NAME=spool-under-test",
				"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test",
				"OTEL_METRIC_EXPORT_INTERVAL=100",
				"OTEL_BSP_SCHEDULE_DELAY=50",
			}
			if c.sampler != "" {
				env = append(env, "OTEL_TRACES_SAMPLER="+c.sampler)
			}
			p := spooltest.Serve(t, spooltest.Options{Env: env}, "--store", "memory:", "--mode", "auto")
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			reqBody, _ := json.Marshal(map[string]string{"prompt": `/call save_note {"text":"` + secret + `"}`, "sessionId": "otlp-1"})
			req, _ := http.NewRequest("POST", p.URL+"/invoke", bytes.NewReader(reqBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || !strings.Contains(string(body), secret) {
				t.Fatalf("invoke: %d %s", res.StatusCode, body)
			}
			p.Cmd.Process.Signal(syscall.SIGTERM) // the exporters flush on the way out
			if code := p.Wait(t, 15*time.Second); code != 0 {
				t.Fatalf("exit %d\n%s", code, p.Stderr.String())
			}

			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, raw := range rec.raw {
				if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("save_note {")) {
					t.Fatalf("an exported payload holds content")
				}
			}
			metrics := map[string]bool{}
			for _, mr := range rec.metrics {
				for _, rm := range mr.GetResourceMetrics() {
					if a := attrMap(rm.GetResource().GetAttributes()); a["service.name"] != "spool-under-test" || a["deployment.environment"] != "test" {
						t.Fatalf("metrics resource %v", a)
					}
					for _, sm := range rm.GetScopeMetrics() {
						for _, m := range sm.GetMetrics() {
							metrics[m.GetName()] = true
						}
					}
				}
			}
			for _, want := range []string{"http.server.request.duration", "spool.turn.duration", "spool.tool.duration", "gen_ai.client.token.usage", "spool.store.operation.duration"} {
				if !metrics[want] {
					t.Errorf("metric %s not exported (got %v)", want, metrics)
				}
			}

			var spans []*tracepb.Span
			for _, tr := range rec.traces {
				for _, rs := range tr.GetResourceSpans() {
					if a := attrMap(rs.GetResource().GetAttributes()); a["service.name"] != "spool-under-test" {
						t.Fatalf("trace resource %v", a)
					}
					for _, ss := range rs.GetScopeSpans() {
						spans = append(spans, ss.GetSpans()...)
					}
				}
			}
			if c.sampler == "always_off" {
				if len(spans) != 0 {
					t.Fatalf("%d spans exported with OTEL_TRACES_SAMPLER=always_off", len(spans))
				}
				return
			}
			byName := map[string]*tracepb.Span{}
			for _, s := range spans {
				byName[s.GetName()] = s
			}
			srv, turn, tool := byName["POST /invoke"], byName["invoke_agent default"], byName["execute_tool save_note"]
			if srv == nil || turn == nil || tool == nil {
				t.Fatalf("spans %v", byName)
			}
			if srv.GetKind() != tracepb.Span_SPAN_KIND_SERVER || attrMap(srv.GetAttributes())["http.route"] != "/invoke" {
				t.Fatalf("server span %v", srv)
			}
			if fmt.Sprintf("%x", srv.GetTraceId()) != traceID || fmt.Sprintf("%x", srv.GetParentSpanId()) != "00f067aa0ba902b7" {
				t.Fatalf("the server span does not continue the client's trace: %x parent %x", srv.GetTraceId(), srv.GetParentSpanId())
			}
			if !bytes.Equal(turn.GetParentSpanId(), srv.GetSpanId()) || !bytes.Equal(tool.GetParentSpanId(), turn.GetSpanId()) {
				t.Fatal("the turn's span is not a child of the HTTP server span, or the tool's of the turn's")
			}
		})
	}
}
