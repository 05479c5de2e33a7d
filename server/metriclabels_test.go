package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/spool-go/spool"
	"github.com/spool-go/spool/server"
)

// The request metrics are labelled by route, method and status, never by
// what a client chooses freely: otelhttp labels them with the request's
// Host (server.address, server.port), which any client may set to
// anything, a series each; behind keys no Host check stops it, and a
// refused request is measured too.
func TestRequestMetricsNotLabelledByHost(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	e := newEnv(t, spool.Config{}, server.Options{Keys: mustKeys(t), MeterProvider: mp})
	for i := range 3 {
		e.get("/v1/sessions", "Host", fmt.Sprintf("zebra-%d.example:%d", i, 8000+i))
	}
	e.key = "project-key-0123456789"
	e.get("/v1/sessions", "Host", "zebra-ok.example:9999")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !strings.HasPrefix(m.Name, "http.server.") {
				continue
			}
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			}
			for _, set := range sets {
				seen++
				for _, kv := range set.ToSlice() {
					if (kv.Key == "server.address" && kv.Value.String() != "") || kv.Key == "server.port" || strings.Contains(kv.Value.String(), "zebra") {
						t.Errorf("%s is labelled by the request's Host: %s=%s", m.Name, kv.Key, kv.Value.String())
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no request metrics")
	}
}
