// Package telemetry sets up the OpenTelemetry SDK for the commands: a
// tracer provider and a meter provider whose exporters are chosen and
// configured by the standard OTEL_* environment variables, and a Shutdown
// that flushes what is buffered. Library packages never import it: they
// take providers as options and default to the global ones, which
// SetGlobal installs.
//
// Variables read here:
//
//	OTEL_SDK_DISABLED=true           no-op providers, nothing exported
//	OTEL_TRACES_EXPORTER             otlp, console (or stdout), none; a comma-separated list
//	OTEL_METRICS_EXPORTER            the same, for metrics
//	OTEL_EXPORTER_OTLP_PROTOCOL      grpc or http/protobuf (the default)
//	OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL override it per signal
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES  the resource, over Config's defaults
//
// The OTLP exporters read their own: OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE and their per-signal forms. The SDK
// reads OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL.
//
// A service that Prometheus scrapes sets Config.Prometheus and serves
// MetricsHandler.
//
// One deliberate departure from the specification: when a signal's
// exporter variable is unset and no OTLP endpoint is configured for it, the
// signal is not exported, rather than sent to localhost:4318. A command run
// on a laptop with no collector then stays quiet instead of logging failed
// exports; setting the variable to "otlp" restores the default endpoint.
package telemetry
