package telemetry

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

func globalTracerProvider() trace.TracerProvider { return otel.GetTracerProvider() }
func globalMeterProvider() metric.MeterProvider  { return otel.GetMeterProvider() }
