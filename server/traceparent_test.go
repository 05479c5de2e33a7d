package server_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// A server given a TracerProvider continues the client's trace (W3C
// traceparent), as its documentation says, also in a program that set no
// global propagator: the OpenTelemetry default is one that reads nothing.
func TestServerContinuesTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, spool.Config{}, server.Options{TracerProvider: tp})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	if r := e.post("/invoke", map[string]any{"prompt": "hi", "sessionId": "tp-1"}, "traceparent", "00-"+traceID+"-"+parent+"-01"); r.status != 200 {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	for _, s := range rec.Ended() {
		if s.Name() != "POST /invoke" {
			continue
		}
		if got := s.SpanContext().TraceID().String(); got != traceID || s.Parent().SpanID().String() != parent || !s.Parent().IsRemote() {
			t.Fatalf("the server span does not continue the client's trace: trace %s, parent %s", got, s.Parent().SpanID())
		}
		return
	}
	t.Fatal("no server span")
}
