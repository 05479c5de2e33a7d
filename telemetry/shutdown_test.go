package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spool-go/spool/telemetry"
)

// Shutdown flushes every signal within its context: a traces endpoint
// that does not answer uses up the time it may have, but not the
// metrics' share, which go out all the same. (They were flushed one
// after the other under one deadline, so a hung traces collector lost
// the last metrics of every process that stopped.)
func TestShutdownFlushesMetricsWhileTracesHang(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers nothing until the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)
	var metrics atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/metrics" {
			metrics.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", hung.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", collector.URL+"/v1/metrics")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000") // only Shutdown exports

	ctx := context.Background()
	p, err := telemetry.Start(ctx, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.TracerProvider.Tracer("test").Start(ctx, "pending")
	span.End()
	c, _ := p.MeterProvider.Meter("test").Int64Counter("spool.test.count")
	c.Add(ctx, 1)

	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	p.Shutdown(sctx) // the traces' error is expected
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Shutdown took %v with a 2s context", d)
	}
	if metrics.Load() == 0 {
		t.Fatal("the metrics were not flushed: the hung traces endpoint used up Shutdown's time")
	}
}
