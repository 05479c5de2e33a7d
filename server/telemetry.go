package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

const instrumentation = "github.com/spool-go/spool/server"

// serverTelemetry is the server's instrumentation: otelhttp's server span
// and metrics for every request (http.server.request.duration and the
// body sizes, by http.route and status), and the server's own gauges.
type serverTelemetry struct {
	wrap    func(http.Handler) http.Handler
	streams metric.Int64UpDownCounter
	gauges  metric.Registration // the queue depth's callback, unregistered by Close
}

// newTelemetry returns the server's instrumentation, or nil when Options
// has neither provider: then no request pays for it.
func newTelemetry(s *Server) (*serverTelemetry, error) {
	tp, mp := s.opts.TracerProvider, s.opts.MeterProvider
	if tp == nil && mp == nil {
		return nil, nil
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	meter := mp.Meter(instrumentation)
	streams, err := meter.Int64UpDownCounter("spool.server.active_streams",
		metric.WithUnit("{stream}"), metric.WithDescription("Event streams (Server-Sent Events) open, by route"))
	if err != nil {
		return nil, err
	}
	queued, err := meter.Int64ObservableGauge("spool.channel.queue.depth",
		metric.WithUnit("{message}"), metric.WithDescription("Messages waiting behind a running turn of their session, by channel"))
	if err != nil {
		return nil, err
	}
	reg, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(queued, int64(s.dispatch.Queued()), metric.WithAttributes(attrChannel.String(s.chat.Name())))
		for _, c := range s.channels {
			o.ObserveInt64(queued, int64(c.dispatch.Queued()), metric.WithAttributes(attrChannel.String(c.driver.Name())))
		}
		return nil
	}, queued)
	if err != nil {
		return nil, err
	}
	return &serverTelemetry{
		wrap: otelhttp.NewMiddleware("spool",
			otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp),
			// The client's traceparent is always read: otelhttp's default
			// is the global propagator, which reads nothing in a program
			// that set none. One it did set (B3, say) is read too.
			otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(otel.GetTextMapPropagator(), propagation.TraceContext{})),
			// Probes and scrapes come every few seconds and say nothing
			// about the service's traffic.
			otelhttp.WithFilter(func(r *http.Request) bool { return !isProbe(r.URL.Path) && r.URL.Path != "/metrics" })),
		streams: streams,
		gauges:  reg,
	}, nil
}

var (
	attrChannel = attribute.Key("spool.channel")
	attrRoute   = attribute.Key("http.route")
)

func (t *serverTelemetry) close() {
	if t != nil {
		t.gauges.Unregister()
	}
}

// routed names the route on the request's server span.
func (t *serverTelemetry) routed(ctx context.Context, route string) {
	trace.SpanFromContext(ctx).SetAttributes(attrRoute.String(route))
}

// streamOpened counts an event stream of route as open, and returns what
// counts it closed.
func (t *serverTelemetry) streamOpened(ctx context.Context, route string) func() {
	attrs := metric.WithAttributes(attrRoute.String(route))
	t.streams.Add(ctx, 1, attrs)
	return func() { t.streams.Add(context.WithoutCancel(ctx), -1, attrs) }
}
