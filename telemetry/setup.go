package telemetry

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Config says what Start sets up besides what the environment asks for.
type Config struct {
	// ServiceName is the service.name of the resource when
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES)
	// does not set it. Default "spool".
	ServiceName string
	// ServiceVersion is the service.version of the resource, when set.
	ServiceVersion string
	// Prometheus makes Providers.Metrics a handler of every metric in
	// the Prometheus text format, besides what OTLP exports.
	Prometheus bool
}

// Providers are a program's OpenTelemetry providers, made by Start.
type Providers struct {
	// TracerProvider exports spans when the environment asks for it, and
	// is a no-op provider otherwise.
	TracerProvider trace.TracerProvider
	// MeterProvider exports metrics over OTLP when the environment asks
	// for it, feeds Metrics when Config.Prometheus, and is a no-op
	// provider when neither.
	MeterProvider metric.MeterProvider
	// Metrics serves the metrics in the Prometheus text format (with the
	// Go runtime's and the process's), when Config.Prometheus.
	Metrics http.Handler
	// Exporting says which signals go out over OTLP (or the exporter
	// OTEL_*_EXPORTER names): "traces", "metrics".
	Exporting []string

	shutdown []func(context.Context) error
}

// Start sets up OpenTelemetry from the standard environment variables,
// with the official SDK and exporters (through autoexport):
//
//   - Spans are exported when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or OTEL_TRACES_EXPORTER
//     names an exporter (otlp, console); metrics likewise with the
//     _METRICS_ variables. Nothing is exported otherwise, and "none" turns
//     a signal off; so does OTEL_SDK_DISABLED=true, for both.
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or the per-signal variable) chooses
//     http/protobuf (the default) or grpc; the endpoint, headers, timeout
//     and TLS variables of the OTLP exporters apply as they document.
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES set the resource;
//     OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG the sampler (default
//     parentbased_always_on); OTEL_BSP_* the span batching and
//     OTEL_METRIC_EXPORT_INTERVAL the metric export interval.
//
// Call Shutdown before the program exits: it flushes what is buffered.
// Start sets no global provider; the program decides.
func Start(ctx context.Context, cfg Config) (*Providers, error) {
	if cfg.ServiceName == "" {
		cfg.ServiceName = "spool"
	}
	p := &Providers{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	traces, metrics := exports("TRACES"), exports("METRICS")
	if !traces && !metrics && !cfg.Prometheus {
		return p, nil
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.ServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	// The environment's attributes are detected after ours, so they win.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, errors.Join(err, p.Shutdown(ctx))
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider = tp
		p.shutdown = append(p.shutdown, tp.Shutdown)
		p.Exporting = append(p.Exporting, "traces")
	}
	var readers []sdkmetric.Option
	if metrics {
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, errors.Join(err, p.Shutdown(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(r))
		p.Exporting = append(p.Exporting, "metrics")
	}
	if cfg.Prometheus {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := promexporter.New(promexporter.WithRegisterer(reg),
			promexporter.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
		if err != nil {
			return nil, errors.Join(err, p.Shutdown(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		p.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	if len(readers) > 0 {
		mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		p.MeterProvider = mp
		p.shutdown = append(p.shutdown, mp.Shutdown)
	}
	return p, nil
}

// exports reports whether the environment asks for the signal (TRACES or
// METRICS) to be exported.
func exports(signal string) bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exporter := strings.TrimSpace(os.Getenv("OTEL_" + signal + "_EXPORTER")); exporter {
	case "none":
		return false
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	return true
}

// Shutdown flushes and stops the exporters, within ctx. The signals are
// flushed side by side: one after the other, an endpoint that does not
// answer would use up ctx and lose what the others still hold.
func (p *Providers) Shutdown(ctx context.Context) error {
	errs := make([]error, len(p.shutdown))
	var wg sync.WaitGroup
	for i, f := range p.shutdown {
		wg.Go(func() { errs[i] = f(ctx) })
	}
	wg.Wait()
	p.shutdown = nil
	return errors.Join(errs...)
}
