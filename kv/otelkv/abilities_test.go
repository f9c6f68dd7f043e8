package otelkv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/internal/forward"
	"github.com/kvshadow/kvshadow/kv/kvtest"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// The instrumented store keeps the contract: the conformance suite passes
// through it, with the SDK recording everything.
func TestConformance(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			return instrument(t, telemetrytest.New(t), memory.New(memory.Config{Clock: clk}), otelkv.Config{System: otelkv.SystemMemory})
		},
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
}

// The four abilities of the sixteen combinations below; metadata has its
// own test.
const (
	bitMask = int(forward.Entry | forward.BulkGet | forward.BulkPut | forward.BulkDelete)
)

// subset hides all of m's optional abilities but those in mask, metadata
// among them.
func subset(m *memory.Store, mask int) kv.Store { return forward.Restrict(m, forward.Set(mask)) }

// abilities is the mask of s's abilities, but metadata.
func abilities(s kv.Store) int {
	set := forward.Of(s)
	if set&forward.Metadata != 0 {
		set |= forward.Entry
	}
	return int(set) & bitMask
}

// Every one of the sixteen combinations of optional abilities comes out of
// New exactly as it went in, and each forwarded ability works and is traced.
func TestAbilitiesAreForwardedExactly(t *testing.T) {
	ctx := context.Background()
	for mask := range bitMask + 1 {
		if mask&^bitMask != 0 {
			continue
		}
		rec := telemetrytest.New(t)
		m := memory.New(memory.Config{})
		inner := subset(m, mask)
		if got := abilities(inner); got != mask {
			t.Fatalf("test helper: subset(%05b) has %05b", mask, got)
		}
		s := instrument(t, rec, inner, otelkv.Config{})
		if got := abilities(s); got != mask {
			t.Errorf("abilities of the instrumented store: %05b, want %05b", got, mask)
		}
		if u, ok := s.(interface{ Unwrap() kv.Store }); !ok || u.Unwrap() != inner {
			t.Errorf("%05b: Unwrap does not return the wrapped store", mask)
		}
		_, innerMeta := inner.(kv.MetadataStore)
		if _, meta := s.(kv.MetadataStore); meta != innerMeta {
			t.Errorf("%05b: the instrumented store keeps metadata: %v; the wrapped one: %v", mask, meta, innerMeta)
		}
		if err := m.Put(ctx, "wordle:a", []byte("A"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if g, ok := s.(kv.ExpiryGetter); ok {
			if e, err := g.GetEntry(ctx, "wordle:a"); err != nil || string(e.Value) != "A" {
				t.Errorf("GetEntry = %q, %v", e.Value, err)
			}
			expectSpan(t, rec, "get_entry wordle", 0)
		}
		if g, ok := s.(kv.BulkGetter); ok {
			if es, err := g.GetMany(ctx, []string{"wordle:a", "wordle:b"}); err != nil || len(es) != 1 {
				t.Errorf("GetMany = %v, %v", es, err)
			}
			expectSpan(t, rec, "get_many wordle", 2)
		}
		if p, ok := s.(kv.BulkPutter); ok {
			if err := p.PutMany(ctx, []kv.Entry{{Key: "wordle:c", Value: []byte("C")}, {Key: "trading:d", Value: []byte("D")}}); err != nil {
				t.Errorf("PutMany: %v", err)
			}
			if v, err := m.Get(ctx, "trading:d"); err != nil || string(v) != "D" {
				t.Errorf("after PutMany: %q, %v", v, err)
			}
			// Keys of two modules: no single db.namespace, a bare name.
			expectSpan(t, rec, "put_many", 2)
		}
		if d, ok := s.(kv.BulkDeleter); ok {
			if err := d.DeleteMany(ctx, []string{"wordle:a"}); err != nil {
				t.Errorf("DeleteMany: %v", err)
			}
			if _, err := m.Get(ctx, "wordle:a"); err == nil {
				t.Error("DeleteMany did not delete")
			}
			expectSpan(t, rec, "delete_many wordle", 1)
		}
	}
}

func expectSpan(t *testing.T, rec *telemetrytest.Recorder, name string, batch int) {
	t.Helper()
	spans := rec.Named(name)
	if len(spans) != 1 {
		t.Errorf("spans named %q: %d, want 1 (all: %v)", name, len(spans), names(rec))
		return
	}
	if batch == 0 {
		return
	}
	if v, _ := telemetrytest.Attr(spans[0], semconv.DBOperationBatchSizeKey); v.AsInt64() != int64(batch) {
		t.Errorf("%s: batch size %d, want %d", name, v.AsInt64(), batch)
	}
}

// Over a store that keeps metadata the instrumented store does too, and
// traces PutEntry; the metadata itself goes on no span.
func TestMetadataIsForwarded(t *testing.T) {
	ctx := context.Background()
	rec := telemetrytest.New(t)
	m := memory.New(memory.Config{})
	s := instrument(t, rec, m, otelkv.Config{})
	ms, ok := s.(kv.MetadataStore)
	if !ok {
		t.Fatal("the instrumented store hides the wrapped store's kv.MetadataStore")
	}
	if err := ms.PutEntry(ctx, kv.Entry{Key: "wordle:a", Value: []byte("A"), Metadata: []byte(`{"secret-tag":1}`)}); err != nil {
		t.Fatal(err)
	}
	expectSpan(t, rec, "put_entry wordle", 0)
	if e, err := ms.GetEntry(ctx, "wordle:a"); err != nil || string(e.Metadata) != `{"secret-tag":1}` {
		t.Fatalf("GetEntry = %s, %v", e.Metadata, err)
	}
	for _, sp := range rec.Ended() {
		for _, a := range sp.Attributes() {
			if strings.Contains(a.Value.String(), "secret-tag") {
				t.Errorf("span %q carries the metadata in %s", sp.Name(), a.Key)
			}
		}
	}
}
