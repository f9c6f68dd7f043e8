// Package telemetrytest gives tests an in-memory OpenTelemetry SDK: a span
// recorder and a manual metric reader behind real providers, and lookups
// that find a span or a metric data point by name and attributes. It lives
// under internal/telemetry because it is SDK code, which library packages
// never import outside their tests.
package telemetrytest
