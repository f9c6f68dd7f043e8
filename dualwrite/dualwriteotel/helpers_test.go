package dualwriteotel_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
)

type fixture struct {
	rec     *telemetrytest.Recorder
	st      *dualwriteotel.Store
	primary *memory.Store
	red     *compare.Redactor
}

// newFixture builds an instrumented composite over a memory primary and the
// given shadow (a memory store when nil), recording into an in-memory SDK;
// opts come after the fixture's own.
func newFixture(t *testing.T, shadow kv.Store, cfg dualwrite.Config, opts ...dualwriteotel.Option) *fixture {
	t.Helper()
	red, err := compare.NewRedactor(compare.KeyHMAC, []byte("fixture secret"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{rec: telemetrytest.New(t), primary: memory.New(memory.Config{}), red: red}
	if shadow == nil {
		shadow = memory.New(memory.Config{})
	}
	cfg.Primary, cfg.Shadow, cfg.Redactor = f.primary, shadow, red
	if cfg.ConsistencyWindow == 0 {
		cfg.ConsistencyWindow = -1 // memory stores read their own writes
	}
	if cfg.Sink == nil {
		cfg.Sink = discard{}
	}
	opts = append([]dualwriteotel.Option{
		dualwriteotel.WithTracerProvider(f.rec.TP), dualwriteotel.WithMeterProvider(f.rec.MP),
		dualwriteotel.WithStoreOptions(dualwrite.WithLogger(slog.New(slog.DiscardHandler))),
	}, opts...)
	f.st, err = dualwriteotel.NewStore(cfg, dualwriteotel.Config{PrimarySystem: "memory", ShadowSystem: "memory"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.st.Close(context.Background()) })
	return f
}

func (f *fixture) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.st.Dual.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// caller starts the span of the code that calls the store.
func (f *fixture) caller(name string) (context.Context, trace.Span) {
	return f.rec.TP.Tracer("bot").Start(context.Background(), name)
}

type discard struct{}

func (discard) Divergence(context.Context, compare.Record) {}

// gateStore holds every Put until released, and says when one has begun:
// a shadow whose lane the test can fill without timing.
type gateStore struct {
	kv.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGateStore() *gateStore {
	return &gateStore{Store: memory.New(memory.Config{}), entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (g *gateStore) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Store.Put(ctx, key, value, opts)
}

func (g *gateStore) open() { g.once.Do(func() { close(g.release) }) }

func childrenOf(spans []sdktrace.ReadOnlySpan, parent trace.SpanContext) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Parent().SpanID() == parent.SpanID() && s.Parent().TraceID() == parent.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

func nil2mem() *memory.Store { return memory.New(memory.Config{}) }
