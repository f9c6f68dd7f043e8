package otelkv_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// unsampledTracers are the tracers whose spans an operation's duration
// cannot link to: OpenTelemetry's no-op one (the service with no traces
// exporter) and an SDK tracer that samples nothing.
func unsampledTracers(t *testing.T) map[string]trace.TracerProvider {
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = never.Shutdown(context.Background()) })
	return map[string]trace.TracerProvider{"noop": tracenoop.NewTracerProvider(), "never-sampled": never}
}

func collect(t *testing.T, r sdkmetric.Reader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// TestEveryCollectionHoldsEveryEndedOperation holds that the durations an
// unsampled store batches reach the histogram by the next collection: 150
// operations fill two batches of 64 and leave 22 held, which the
// collection must record before it reads the histogram (without that it
// finds 128 durations for 150 operations).
func TestEveryCollectionHoldsEveryEndedOperation(t *testing.T) {
	for name, tp := range unsampledTracers(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { _ = mp.Shutdown(ctx) })
			s, err := otelkv.New(memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory, Role: otelkv.RolePrimary},
				otelkv.WithTracerProvider(tp), otelkv.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			gets := func(found, missing int) {
				for range found {
					if _, err := s.Get(ctx, "wordle:a"); err != nil {
						t.Fatal(err)
					}
				}
				for range missing {
					_, _ = s.Get(ctx, "wordle:none")
				}
			}
			want := func(rm metricdata.ResourceMetrics, outcome string, n float64) {
				t.Helper()
				attrs := []attribute.KeyValue{otelkv.OutcomeKey.String(outcome), attribute.String("db.operation.name", "get")}
				if got, _ := telemetrytest.Value(rm, otelkv.MetricOperations, attrs...); got != n {
					t.Errorf("%s gets counted: %v, want %v", outcome, got, n)
				}
				if got, _ := telemetrytest.Value(rm, otelkv.MetricDuration, attrs...); got != n {
					t.Errorf("%s get durations: %v, want %v", outcome, got, n)
				}
			}
			gets(100, 49)
			rm := collect(t, reader)
			want(rm, "ok", 100)
			want(rm, "not_found", 49)
			if got, _ := telemetrytest.Value(rm, otelkv.MetricDuration, attribute.String("db.operation.name", "put")); got != 1 {
				t.Errorf("put durations: %v, want 1", got)
			}
			gets(10, 1)
			rm = collect(t, reader)
			want(rm, "ok", 110)
			want(rm, "not_found", 50)
		})
	}
}

// TestBatchesLoseNothingUnderConcurrency has eight callers fill and flush
// batches while collections run beside them: the last collection holds
// every operation exactly once, in both metrics, and no collection ever
// sees a total fall.
func TestBatchesLoseNothingUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	s, err := otelkv.New(memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory},
		otelkv.WithTracerProvider(tracenoop.NewTracerProvider()), otelkv.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 1000
	done := make(chan struct{})
	collected := make(chan error, 1)
	go func() {
		var last float64
		for {
			select {
			case <-done:
				collected <- nil
				return
			default:
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				collected <- err
				return
			}
			n, _ := telemetrytest.Value(rm, otelkv.MetricDuration)
			if n < last {
				collected <- fmt.Errorf("durations fell from %v to %v", last, n)
				return
			}
			last = n
		}
	}()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				_ = s.Put(ctx, fmt.Sprintf("wordle:%d:%d", c, i), []byte("v"), kv.PutOptions{})
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	rm := collect(t, reader)
	for _, name := range []string{otelkv.MetricOperations, otelkv.MetricDuration} {
		if got, _ := telemetrytest.Value(rm, name); got != callers*each {
			t.Errorf("%s: %v, want %d", name, got, callers*each)
		}
	}
}

// TestSampledOperationsKeepTheirExemplars holds that an operation whose
// span is sampled is recorded at once, under its span: the histogram's
// exemplar carries that span's trace.
func TestSampledOperationsKeepTheirExemplars(t *testing.T) {
	rec := telemetrytest.New(t)
	s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory})
	if _, err := s.Get(context.Background(), "wordle:none"); err == nil {
		t.Fatal("Get of a missing key succeeded")
	}
	span := rec.Named("get wordle")[0]
	m, ok := telemetrytest.Metric(rec.Collect(t), otelkv.MetricDuration)
	if !ok {
		t.Fatal("no duration recorded")
	}
	h := m.Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || len(h.DataPoints[0].Exemplars) != 1 {
		t.Fatalf("histogram points %+v, want one with one exemplar", h.DataPoints)
	}
	if got, want := fmt.Sprintf("%x", h.DataPoints[0].Exemplars[0].TraceID), span.SpanContext().TraceID().String(); got != want {
		t.Errorf("exemplar's trace %s, want the span's %s", got, want)
	}
}

// TestStoresOfOneRoleAddUp holds that two stores with the same backend and
// role (the primaries of two namespaces) report one series that is the sum
// of both, as a synchronous counter's would be, not the last store's count.
func TestStoresOfOneRoleAddUp(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	var stores []kv.Store
	for range 2 {
		s, err := otelkv.New(memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemCloudflareKV, Role: otelkv.RolePrimary},
			otelkv.WithTracerProvider(tracenoop.NewTracerProvider()), otelkv.WithMeterProvider(mp))
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	for i, n := range []int{3, 5} {
		for range n {
			_, _ = stores[i].Get(ctx, "wordle:none")
		}
	}
	for round := 1; round <= 2; round++ {
		rm := collect(t, reader)
		for _, name := range []string{otelkv.MetricOperations, otelkv.MetricDuration} {
			if got, _ := telemetrytest.Value(rm, name, otelkv.RoleKey.String(otelkv.RolePrimary)); got != 8 {
				t.Errorf("collection %d, %s: %v, want 8 (3 and 5)", round, name, got)
			}
		}
	}
}
