package dualwriteotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

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
}

const benchKeys = 1024

var keys = func() []string {
	k := make([]string, benchKeys)
	for i := range k {
		k[i] = fmt.Sprintf("wordle:games:%d", i)
	}
	return k
}()

// benchPut measures a Put including its mirrored write: the lanes are
// flushed before the clock stops, so the asynchronous work is counted.
func benchPut(b *testing.B, s kv.Store, d *dualwrite.Store) {
	ctx := context.Background()
	value := []byte(`{"guesses":["crane","slate"],"done":false}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.Put(ctx, keys[i%benchKeys], value, kv.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportDrops(b, d)
}

// benchGet measures a Get, a tenth of them compared with the shadow.
func benchGet(b *testing.B, s kv.Store, d *dualwrite.Store) {
	ctx := context.Background()
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Get(ctx, keys[i%benchKeys]); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportDrops(b, d)
}

func reportDrops(b *testing.B, d *dualwrite.Store) {
	var n uint64
	for _, c := range d.Stats().Drops {
		n += c
	}
	if n > 0 {
		b.Fatalf("%d writes dropped: the measure would not be of the same work", n)
	}
}

var workloads = []struct {
	name string
	run  func(*testing.B, kv.Store, *dualwrite.Store)
}{{"put", benchPut}, {"get", benchGet}}

// BenchmarkComposite measures the composite plain, instrumented with no-op
// providers, and instrumented with the SDK recording every span and metric.
func BenchmarkComposite(b *testing.B) {
	for _, w := range workloads {
		for _, v := range variants {
			b.Run(w.name+"/"+v.name, func(b *testing.B) {
				s, d := v.open(b)
				w.run(b, s, d)
			})
		}
	}
}

// BenchmarkOverhead runs the three variants of each workload back to back
// in one process and reports the instrumented ones against the plain one:
// time as a ratio, allocations as extra allocations per operation.
func BenchmarkOverhead(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			res := make(map[string]testing.BenchmarkResult)
			for _, v := range variants {
				res[v.name] = testing.Benchmark(func(b *testing.B) {
					s, d := v.open(b)
					w.run(b, s, d)
				})
			}
			for b.Loop() {
			}
			plain := res["plain"]
			for _, name := range []string{"noop", "sdk"} {
				r := res[name]
				b.ReportMetric(float64(r.NsPerOp())/float64(plain.NsPerOp()), name+"-time-x")
				b.ReportMetric(float64(r.AllocsPerOp()-plain.AllocsPerOp()), name+"-extra-allocs/op")
			}
			b.ReportMetric(float64(plain.NsPerOp()), "plain-ns/op")
		})
	}
}
