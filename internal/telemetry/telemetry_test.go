package telemetry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/internal/telemetry"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// clearEnv blanks every variable the set-up reads, so that the machine's
// environment cannot steer a test.
func clearEnv(t *testing.T) {
	for _, name := range []string{
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
	} {
		t.Setenv(name, "")
	}
}

// exercise runs a few operations through an instrumented memory store.
func exercise(t *testing.T, tp trace.TracerProvider, mp metric.MeterProvider) {
	t.Helper()
	s, err := otelkv.New(memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory, Role: otelkv.RolePrimary},
		otelkv.WithTracerProvider(tp), otelkv.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "wordle:games:1", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "wordle:games:1"); err != nil {
		t.Fatal(err)
	}
}

func TestExportsOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(testing.TB) *telemetrytest.Collector
	}{
		{"http/protobuf", telemetrytest.StartHTTPCollector},
		{"grpc", telemetrytest.StartGRPCCollector},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			clearEnv(t)
			col := tc.start(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.protocol)
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=migration")
			t.Setenv("OTEL_SERVICE_NAME", "bot-under-test")
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci")
			if tc.protocol == "grpc" {
				t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
			}

			tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "ignored-default", ServiceVersion: "1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, tel.TracerProvider, tel.MeterProvider)
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}

			var names []string
			for _, s := range col.Spans() {
				names = append(names, s.Name)
				if s.Name == "put wordle" {
					if v, _ := telemetrytest.SpanAttr(s, "db.system.name"); v != "memory" {
						t.Errorf("db.system.name = %q", v)
					}
					if v, _ := telemetrytest.SpanAttr(s, "kvshadow.role"); v != "primary" {
						t.Errorf("kvshadow.role = %q", v)
					}
				}
			}
			if !contains(names, "put wordle") || !contains(names, "get wordle") {
				t.Errorf("spans received: %v", names)
			}
			var metrics []string
			for _, m := range col.Metrics() {
				metrics = append(metrics, m.Name)
			}
			if !contains(metrics, otelkv.MetricOperations) || !contains(metrics, otelkv.MetricDuration) {
				t.Errorf("metrics received: %v", metrics)
			}
			res := col.ResourceAttrs()
			for k, want := range map[string]string{
				"service.name": "bot-under-test", "service.version": "1.2.3",
				"deployment.environment.name": "ci", "telemetry.sdk.language": "go",
			} {
				if res[k] != want {
					t.Errorf("resource %s = %q, want %q", k, res[k], want)
				}
			}
			headers := col.Headers()
			if len(headers) < 2 {
				t.Fatalf("%d requests, want traces and metrics", len(headers))
			}
			for _, h := range headers {
				if h.Get("x-team") != "migration" {
					t.Errorf("request without the configured header: %v", h)
				}
			}
		})
	}
}

func TestPerSignalProtocolOverrides(t *testing.T) {
	clearEnv(t)
	httpCol := telemetrytest.StartHTTPCollector(t)
	grpcCol := telemetrytest.StartGRPCCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", httpCol.Endpoint+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", grpcCol.Endpoint)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, tel.TracerProvider, tel.MeterProvider)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(httpCol.Spans()) == 0 || len(httpCol.Metrics()) != 0 {
		t.Errorf("HTTP collector: %d spans, %d metrics; want spans only", len(httpCol.Spans()), len(httpCol.Metrics()))
	}
	if len(grpcCol.Metrics()) == 0 || len(grpcCol.Spans()) != 0 {
		t.Errorf("gRPC collector: %d spans, %d metrics; want metrics only", len(grpcCol.Spans()), len(grpcCol.Metrics()))
	}
	if got := httpCol.ResourceAttrs()["service.name"]; got != "kvshadow" {
		t.Errorf("default service.name = %q, want kvshadow", got)
	}
}

func TestConsoleExporters(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_METRICS_EXPORTER", "stdout")
	var out bytes.Buffer
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "local", Console: &out})
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, tel.TracerProvider, tel.MeterProvider)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Name":"put wordle"`, otelkv.MetricOperations, `"Value":"local"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("console output lacks %s:\n%s", want, out.String())
		}
	}
}

// Unset exporters with no endpoint, "none", and OTEL_SDK_DISABLED all
// export nothing, and all shut down cleanly.
func TestNothingExportedUnlessConfigured(t *testing.T) {
	col := telemetrytest.StartHTTPCollector(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"unset", nil},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "otlp,none", "OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint}},
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": col.Endpoint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tel, err := telemetry.Setup(context.Background(), telemetry.Config{})
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, tel.TracerProvider, tel.MeterProvider)
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatalf("second Shutdown: %v", err)
			}
		})
	}
	if n := len(col.Headers()); n != 0 {
		t.Errorf("%d export requests reached the collector", n)
	}
}

func TestUnsupportedConfiguration(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_METRICS_EXPORTER": "prometheus"},
		{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "thrift"},
	} {
		clearEnv(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		_, err := telemetry.Setup(context.Background(), telemetry.Config{})
		if !errors.Is(err, telemetry.ErrConfig) {
			t.Errorf("%v: err = %v, want ErrConfig", env, err)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestPrometheusServesTheSameInstruments(t *testing.T) {
	clearEnv(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "kvshadow-test", Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	exercise(t, tel.TracerProvider, tel.MeterProvider)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`kvshadow_store_operations_total{`, `db_operation_name="put"`, `kvshadow_role="primary"`,
		`kvshadow_store_operation_duration_seconds_bucket{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %s:\n%s", want, body)
		}
	}

	// Without Config.Prometheus the handler serves an empty exposition.
	plain, err := telemetry.Setup(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Shutdown(context.Background())
	exercise(t, plain.TracerProvider, plain.MeterProvider)
	rec = httptest.NewRecorder()
	plain.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "kvshadow_") {
		t.Fatalf("without Prometheus: %d %q", rec.Code, rec.Body.String())
	}
}

func TestNoTraceExporterRecordsNoSpans(t *testing.T) {
	clearEnv(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	_, span := tel.TracerProvider.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("with no trace exporter, spans are still recorded (and their attributes computed) for nobody")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	withConsole, err := telemetry.Setup(context.Background(), telemetry.Config{Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer withConsole.Shutdown(context.Background())
	_, span = withConsole.TracerProvider.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	if !span.IsRecording() {
		t.Fatal("with a console exporter, spans are not recorded")
	}
}

// TestNoTraceExporterLooksForNoExemplar holds that with no trace exported
// a measurement does not look into its context for a span to make an
// exemplar of (none could be named): a copy's context, the caller's values
// without its cancellation, costs an allocation for each look.
func TestNoTraceExporterLooksForNoExemplar(t *testing.T) {
	clearEnv(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	counter, err := tel.MeterProvider.Meter("test").Int64Counter("test.ops")
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	ctx := context.WithoutCancel(context.WithValue(context.Background(), key{}, "the caller's"))
	if got := testing.AllocsPerRun(100, func() { counter.Add(ctx, 1) }); got != 0 {
		t.Errorf("a measurement allocates %v with no trace exported, want 0", got)
	}
}
