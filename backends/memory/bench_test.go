package memory_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// These are the baseline the composite store is measured against.

func seeded(b *testing.B, n int) *memory.Store {
	b.Helper()
	s := memory.New(memory.Config{})
	for i := range n {
		if err := s.Put(b.Context(), fmt.Sprintf("wordle:games:%06d", i), []byte(`{"word":"apple"}`), kv.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkGet(b *testing.B) {
	s := seeded(b, 10_000)
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, fmt.Sprintf("wordle:games:%06d", i%10_000)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkPut(b *testing.B) {
	s := seeded(b, 10_000)
	ctx := b.Context()
	v := []byte(`{"word":"apple","guesses":["crane"]}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Put(ctx, fmt.Sprintf("wordle:games:%06d", i%10_000), v, kv.PutOptions{TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkDelete(b *testing.B) {
	s := seeded(b, 0)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Delete(ctx, "wordle:games:000001"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListPage100(b *testing.B) {
	s := seeded(b, 10_000)
	ctx := b.Context()
	b.ReportAllocs()
	cursor := ""
	for b.Loop() {
		res, err := s.List(ctx, kv.ListOptions{Prefix: "wordle:", Limit: 100, Cursor: cursor})
		if err != nil {
			b.Fatal(err)
		}
		cursor = res.Cursor
	}
}

// BenchmarkPutNewKey writes a key never written before each time, into a
// store that grows by one key an operation: the cost of keeping the keys in
// order for List.
func BenchmarkPutNewKey(b *testing.B) {
	s := seeded(b, 0)
	ctx := b.Context()
	v := []byte(`{"word":"apple"}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Spread over the key space, as a bot's user ids are, rather
		// than each after the last.
		if err := s.Put(ctx, fmt.Sprintf("wordle:games:%016x", uint64(i)*0x9e3779b97f4a7c15), v, kv.PutOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
