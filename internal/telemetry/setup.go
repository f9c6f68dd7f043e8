package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Config holds what a command knows about itself. The zero value names the
// service "kvshadow" and writes console output to standard error.
type Config struct {
	// ServiceName is service.name unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES set one; "" means "kvshadow".
	ServiceName string
	// ServiceVersion is service.version, when not "".
	ServiceVersion string
	// Console receives the console exporters' JSON; nil means os.Stderr,
	// because the commands print their reports on standard output.
	Console io.Writer
	// Prometheus adds a reader that serves the same instruments for a
	// Prometheus scrape (MetricsHandler), whatever OTEL_METRICS_EXPORTER
	// says; OTEL_SDK_DISABLED=true still disables it.
	Prometheus bool
}

// Telemetry is the SDK set up for one process.
type Telemetry struct {
	// TracerProvider and MeterProvider are the SDK's providers, or no-op
	// ones when the SDK is disabled.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	metrics   http.Handler
	shutdowns []func(context.Context) error
	once      sync.Once
	err       error
}

// Setup builds the providers from cfg and the environment. The exporters
// connect lazily: an unreachable collector fails exports, never Setup.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(), metrics: emptyMetrics()}
	if disabled() {
		return t, nil
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	console := cmp.Or(cfg.Console, io.Writer(os.Stderr))
	tp, err := newTracerProvider(ctx, res, console)
	if err != nil {
		return nil, err
	}
	if tp != nil {
		t.TracerProvider = tp
		t.shutdowns = append(t.shutdowns, tp.Shutdown)
	}
	// With no trace exported no exemplar could name one; the filter would
	// still look for a span in every measurement's context.
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if tp == nil {
		opts = append(opts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	}
	if cfg.Prometheus {
		reader, handler, err := newPrometheus()
		if err != nil {
			_ = t.Shutdown(ctx) // stops the tracer provider, if any
			return nil, err
		}
		opts, t.metrics = append(opts, sdkmetric.WithReader(reader)), handler
	}
	mp, err := newMeterProvider(ctx, console, opts)
	if err != nil {
		_ = t.Shutdown(ctx) // stops the tracer provider, if any
		return nil, err
	}
	t.MeterProvider = mp
	t.shutdowns = append(t.shutdowns, mp.Shutdown)
	return t, nil
}

// SetGlobal installs the providers and the W3C trace-context and baggage
// propagators as the process's globals, which every kvshadow library
// package uses unless given providers of its own.
func (t *Telemetry) SetGlobal() {
	otel.SetTracerProvider(t.TracerProvider)
	otel.SetMeterProvider(t.MeterProvider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// Shutdown flushes buffered spans and a last collection of metrics to the
// exporters, then stops them. It waits at most until ctx ends; calling it
// again returns the first call's result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.once.Do(func() {
		var errs []error
		for _, fn := range t.shutdowns {
			errs = append(errs, fn(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			t.err = fmt.Errorf("telemetry: shutdown: %w", err)
		}
	})
	return t.err
}

func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	defaults := []resource.Option{resource.WithAttributes(semconv.ServiceName(cmp.Or(cfg.ServiceName, "kvshadow")))}
	if cfg.ServiceVersion != "" {
		defaults = append(defaults, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	// Later detectors win: the environment overrides the command's defaults.
	opts := append(defaults, resource.WithTelemetrySDK(), resource.WithFromEnv())
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// newTracerProvider returns nil when no exporter is chosen: spans that go
// nowhere are then not recorded at all (a no-op provider), which saves each
// instrumented call the cost of a span.
func newTracerProvider(ctx context.Context, res *resource.Resource, console io.Writer) (*sdktrace.TracerProvider, error) {
	chosen, err := exporters(traces)
	if err != nil || len(chosen) == 0 {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range chosen {
		var exp sdktrace.SpanExporter
		switch e {
		case exportConsole:
			exp, err = stdouttrace.New(stdouttrace.WithWriter(console))
		case exportOTLP:
			var p protocol
			if p, err = otlpProtocol(traces); err != nil {
				return nil, err
			}
			if p == protoGRPC {
				exp, err = otlptracegrpc.New(ctx)
			} else {
				exp, err = otlptracehttp.New(ctx)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s trace exporter: %w", e, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

func newMeterProvider(ctx context.Context, console io.Writer, opts []sdkmetric.Option) (*sdkmetric.MeterProvider, error) {
	chosen, err := exporters(metrics)
	if err != nil {
		return nil, err
	}
	for _, e := range chosen {
		var exp sdkmetric.Exporter
		switch e {
		case exportConsole:
			exp, err = stdoutmetric.New(stdoutmetric.WithWriter(console))
		case exportOTLP:
			var p protocol
			if p, err = otlpProtocol(metrics); err != nil {
				return nil, err
			}
			if p == protoGRPC {
				exp, err = otlpmetricgrpc.New(ctx)
			} else {
				exp, err = otlpmetrichttp.New(ctx)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: %s metric exporter: %w", e, err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}
