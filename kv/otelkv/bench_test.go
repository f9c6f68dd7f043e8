package otelkv_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// BenchmarkGet runs a Get on the memory store alone and through otelkv
// with the SDK's meter and no tracer (the service with no traces
// exporter), side by side: what the instrumentation adds to a call.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	mem := memory.New(memory.Config{})
	if err := mem.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(ctx) })
	wrapped, err := otelkv.New(mem, otelkv.Config{System: otelkv.SystemMemory, Role: otelkv.RolePrimary},
		otelkv.WithTracerProvider(tracenoop.NewTracerProvider()), otelkv.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	for _, side := range []struct {
		name string
		s    kv.Store
	}{{"memory", mem}, {"otelkv", wrapped}} {
		b.Run(side.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := side.s.Get(ctx, "wordle:a"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
