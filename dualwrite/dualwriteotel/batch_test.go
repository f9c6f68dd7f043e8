package dualwriteotel_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// TestUnsampledCopiesReachEveryCollection holds that the metrics of copies
// whose spans are not sampled are all in the next collection: 150 copies,
// none held back (a batch of 64 held them, which every collection had to
// record first).
func TestUnsampledCopiesReachEveryCollection(t *testing.T) {
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite}, dualwriteotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	ctx := context.Background()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := f.st.KV.Put(ctx, fmt.Sprintf("wordle:%d", i), []byte("v"), kv.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		f.flush(t)
	}
	attrs := []attribute.KeyValue{dualwriteotel.OperationKey.String("put"), otelkv.RoleKey.String("shadow"), otelkv.OutcomeKey.String("ok")}
	want := func(n float64) {
		t.Helper()
		rm := f.rec.Collect(t)
		for _, name := range []string{dualwriteotel.MetricAsyncOperations, dualwriteotel.MetricAsyncDuration, dualwriteotel.MetricAsyncWait} {
			if got, _ := telemetrytest.Value(rm, name, attrs...); got != n {
				t.Errorf("%s: %v, want %v", name, got, n)
			}
		}
	}
	put(0, 150)
	want(150)
	put(150, 160)
	want(160)
}

// TestSampledCopiesKeepTheirExemplars holds that a copy whose span is
// sampled is recorded at once, under its span: its duration's exemplar
// carries the copy's trace.
func TestSampledCopiesKeepTheirExemplars(t *testing.T) {
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite})
	if err := f.st.KV.Put(context.Background(), "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	m, ok := telemetrytest.Metric(f.rec.Collect(t), dualwriteotel.MetricAsyncDuration)
	if !ok {
		t.Fatal("no copy's duration recorded")
	}
	h := m.Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || len(h.DataPoints[0].Exemplars) != 1 {
		t.Fatalf("histogram points %+v, want one with one exemplar", h.DataPoints)
	}
	traces := map[string]bool{}
	for _, s := range f.rec.Ended() {
		traces[s.SpanContext().TraceID().String()] = true
	}
	if id := fmt.Sprintf("%x", h.DataPoints[0].Exemplars[0].TraceID); !traces[id] {
		t.Errorf("exemplar's trace %s is none of the recorded spans'", id)
	}
}

// TestUntracedCopiesCostWhatNoObserverCosts holds that a copy's context
// allocates with tracing off what it does with no observer at all
// (NopObserver: the caller's values without its cancellation), that its
// end then looks for no span (a failed Value through that context
// allocates), and that an unsampled span allocates nothing for its
// options: the same as a bare Start (the span kind and the attributes
// cost four allocations a copy).
func TestUntracedCopiesCostWhatNoObserverCosts(t *testing.T) {
	ctx := context.Background()
	off, err := dualwriteotel.New(dualwriteotel.WithTracerProvider(tracenoop.NewTracerProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(100, func() { _ = off.AsyncContext(ctx, dualwrite.OpPut) }); got > 1 {
		t.Errorf("a copy's context with tracing off: %v allocations, want 1 (the caller's values without its cancellation)", got)
	}
	copyCtx := off.AsyncContext(t.Context(), dualwrite.OpPut)
	if got := testing.AllocsPerRun(100, func() { off.OpDone(copyCtx, dualwrite.OpEvent{Op: dualwrite.OpPut}) }); got > 0 {
		t.Errorf("a copy's end with tracing off: %v allocations, want none (no span to look for)", got)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	unsampled, err := dualwriteotel.New(dualwriteotel.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	tracer := tp.Tracer(dualwriteotel.ScopeName)
	bare := testing.AllocsPerRun(100, func() { _, _ = tracer.Start(context.WithoutCancel(ctx), dualwriteotel.SpanPut) })
	if got := testing.AllocsPerRun(100, func() { _ = unsampled.AsyncContext(ctx, dualwrite.OpPut) }); got > bare {
		t.Errorf("an unsampled copy's context: %v allocations, a bare Start %v", got, bare)
	}
}
