package dualwriteotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/kv"
)

// benchConfig is the composite under measure: the shadow stage, one read in
// ten compared, lanes deep enough that no write is dropped.
func benchConfig() dualwrite.Config {
	return dualwrite.Config{
		Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{}),
		Stage: dualwrite.Shadow, CompareRate: 0.1, ConsistencyWindow: -1,
		LaneDepth: 1 << 14, Sink: discard{},
	}
}

type variant struct {
	name string
	// open returns the store the caller uses and the composite beneath.
	open func(b *testing.B) (kv.Store, *dualwrite.Store)
}

func quiet() dualwrite.Option { return dualwrite.WithLogger(slog.New(slog.DiscardHandler)) }

func instrumented(b *testing.B, opts ...dualwriteotel.Option) (kv.Store, *dualwrite.Store) {
	st, err := dualwriteotel.NewStore(benchConfig(), dualwriteotel.Config{}, append(opts, dualwriteotel.WithStoreOptions(quiet()))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close(context.Background()) })
	return st.KV, st.Dual
}

// discardExporter is an SDK span exporter that drops what it is given: the
// SDK does all of its work (sampling, recording, batching) but nothing is
// serialized.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

var variants = []variant{
	{"plain", func(b *testing.B) (kv.Store, *dualwrite.Store) {
		d, err := dualwrite.New(benchConfig(), quiet())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = d.Close(context.Background()) })
		return d, d
	}},
	{"noop", func(b *testing.B) (kv.Store, *dualwrite.Store) {
		return instrumented(b, dualwriteotel.WithTracerProvider(tracenoop.NewTracerProvider()),
			dualwriteotel.WithMeterProvider(metricnoop.NewMeterProvider()))
	}},
	{"sdk", func(b *testing.B) (kv.Store, *dualwrite.Store) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		return instrumented(b, dualwriteotel.WithTracerProvider(tp), dualwriteotel.WithMeterProvider(mp))
	}},
	// As a production deployment would run: every metric, one trace in a
	// hundred.
	{"sdk-1pct", func(b *testing.B) (kv.Store, *dualwrite.Store) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		return instrumented(b, dualwriteotel.WithTracerProvider(tp), dualwriteotel.WithMeterProvider(mp))
	}},
}

const benchKeys = 1024

var keys = func() []string {
	k := make([]string, benchKeys)
	for i := range k {
		k[i] = fmt.Sprintf("wordle:games:%d", i)
	}
	return k
}()

var benchValue = []byte(`{"guesses":["crane","slate"],"done":false}`)

// A workload is one operation of the caller's, measured with whatever
// asynchronous work it causes: the lanes are flushed before the clock stops.
var workloads = []struct {
	name    string
	prepare func(context.Context, kv.Store) error
	op      func(ctx context.Context, s kv.Store, i int) error
}{
	{"put", nil, func(ctx context.Context, s kv.Store, i int) error {
		return s.Put(ctx, keys[i%benchKeys], benchValue, kv.PutOptions{})
	}},
	// A tenth of the reads are compared with the shadow.
	{"get", func(ctx context.Context, s kv.Store) error {
		for _, k := range keys {
			if err := s.Put(ctx, k, benchValue, kv.PutOptions{}); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context, s kv.Store, i int) error {
		_, err := s.Get(ctx, keys[i%benchKeys])
		return err
	}},
}

// flushEvery bounds what the lanes hold, far below their capacity, so that
// a caller faster than the lanes' workers never drops a write and every
// variant does the same work; each variant pays the same flushes.
const flushEvery = 4096

func backpressure(b *testing.B, d *dualwrite.Store, i int) {
	if (i+1)%flushEvery == 0 {
		if err := d.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// measure runs n operations of workload w on variant v and returns the
// time and the allocations (of every goroutine, lanes included) per
// operation.
func measure(b *testing.B, wi, vi, n int) (nsPerOp, allocsPerOp float64) {
	w, v := workloads[wi], variants[vi]
	ctx := context.Background()
	s, d := v.open(b)
	defer func() { _ = d.Close(ctx) }()
	if w.prepare != nil {
		if err := w.prepare(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := d.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := range n {
		if err := w.op(ctx, s, i); err != nil {
			b.Fatal(err)
		}
		backpressure(b, d, i)
	}
	if err := d.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	var drops uint64
	for _, c := range d.Stats().Drops {
		drops += c
	}
	if drops > 0 {
		b.Fatalf("%d writes dropped: the variants would not do the same work", drops)
	}
	return float64(elapsed.Nanoseconds()) / float64(n), float64(after.Mallocs-before.Mallocs) / float64(n)
}

// BenchmarkComposite measures the composite plain, instrumented with no-op
// providers, instrumented with the SDK recording every span and metric, and
// with the SDK sampling one trace in a hundred.
func BenchmarkComposite(b *testing.B) {
	for _, w := range workloads {
		for _, v := range variants {
			b.Run(w.name+"/"+v.name, func(b *testing.B) {
				b.ReportAllocs()
				ctx := context.Background()
				s, d := v.open(b)
				if w.prepare != nil {
					if err := w.prepare(ctx, s); err != nil {
						b.Fatal(err)
					}
					if err := d.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := range b.N {
					if err := w.op(ctx, s, i); err != nil {
						b.Fatal(err)
					}
					backpressure(b, d, i)
				}
				if err := d.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
			})
		}
	}
}

// BenchmarkOverhead runs the three variants of each workload back to back
// in one process, b.N operations each, and reports each one's ns/op and
// allocs/op and the instrumented ones against the plain one (time-x is the
// ratio of times). Its own ns/op is that of the three together.
func BenchmarkOverhead(b *testing.B) {
	for wi, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			ns := make([]float64, len(variants))
			allocs := make([]float64, len(variants))
			for vi := range variants {
				ns[vi], allocs[vi] = measure(b, wi, vi, b.N)
			}
			for vi, v := range variants {
				b.ReportMetric(ns[vi], v.name+"-ns/op")
				b.ReportMetric(allocs[vi], v.name+"-allocs/op")
				if vi > 0 {
					b.ReportMetric(ns[vi]/ns[0], v.name+"-time-x")
				}
			}
		})
	}
}
