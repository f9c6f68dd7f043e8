package forward

import (
	"context"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// TestComposeIsExact: for each of the 24 combinations of abilities an inner
// store can have, the composed wrapper has exactly those, each one reaching
// the wrapper's own implementation, and Unwrap returns the inner store.
func TestComposeIsExact(t *testing.T) {
	ctx := context.Background()
	m := memory.New(memory.Config{})
	seen := 0
	for mask := range 1 << 5 {
		if mask&hasEntry != 0 && mask&hasMetadata != 0 {
			continue // metadata implies the entry read: one state, not two
		}
		seen++
		inner := Restrict(m, Set(mask))
		if got := Of(inner); got != Set(mask) {
			t.Fatalf("Restrict(%05b) has %05b", mask, got)
		}
		calls := map[string]int{}
		wrapper := Compose(m, inner, Abilities{
			GetEntry: func(ctx context.Context, k string) (kv.Entry, error) { calls["GetEntry"]++; return m.GetEntry(ctx, k) },
			PutEntry: func(ctx context.Context, e kv.Entry) error { calls["PutEntry"]++; return m.PutEntry(ctx, e) },
			GetMany: func(ctx context.Context, k []string) ([]kv.Entry, error) {
				calls["GetMany"]++
				return m.GetMany(ctx, k)
			},
			PutMany:    func(ctx context.Context, e []kv.Entry) error { calls["PutMany"]++; return m.PutMany(ctx, e) },
			DeleteMany: func(ctx context.Context, k []string) error { calls["DeleteMany"]++; return m.DeleteMany(ctx, k) },
		})
		if got := Of(wrapper); got != Set(mask) {
			t.Errorf("Compose over %05b has %05b", mask, got)
		}
		_ = map[kv.Store]bool{wrapper: true} // comparable, as a store must be to be a map key
		if u, ok := wrapper.(interface{ Unwrap() kv.Store }); !ok || u.Unwrap() != inner {
			t.Errorf("%05b: Unwrap does not return the inner store", mask)
		}
		want := 0
		if s, ok := wrapper.(kv.ExpiryGetter); ok {
			_, _ = s.GetEntry(ctx, "k")
			want++
		}
		if s, ok := wrapper.(kv.MetadataStore); ok {
			_ = s.PutEntry(ctx, kv.Entry{Key: "k"})
			want++
		}
		if s, ok := wrapper.(kv.BulkGetter); ok {
			_, _ = s.GetMany(ctx, []string{"k"})
			want++
		}
		if s, ok := wrapper.(kv.BulkPutter); ok {
			_ = s.PutMany(ctx, nil)
			want++
		}
		if s, ok := wrapper.(kv.BulkDeleter); ok {
			_ = s.DeleteMany(ctx, nil)
			want++
		}
		got := 0
		for _, n := range calls {
			got += n
		}
		if got != want || len(calls) != want {
			t.Errorf("%05b: the wrapper's own functions ran %v, want each of the %d abilities once", mask, calls, want)
		}
	}
	if seen != 24 {
		t.Fatalf("%d combinations, want 24", seen)
	}
}
