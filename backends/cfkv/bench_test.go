package cfkv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// The benchmarks run each operation on the memory backend and on cfkv
// against the kvapi server over memory, side by side in one run. For cfkv
// they report requests/op counted at the server; allocs/op include the
// in-process server's own allocations.

type backend struct {
	name     string
	store    kv.Store
	requests func() int64
}

func backends(b *testing.B) []backend {
	mem := memory.New(memory.Config{})
	r := newRig(b, nil, nil)
	return []backend{
		{"memory", mem, func() int64 { return 0 }},
		{"cfkv", r.store, r.server.Requests},
	}
}

// bench runs op for each backend after seeding it with n keys.
func bench(b *testing.B, n int, op func(b *testing.B, s kv.Store, i int)) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			seedBench(b, be.store, n)
			b.ReportAllocs()
			before := be.requests()
			i := 0
			for b.Loop() {
				op(b, be.store, i)
				i++
			}
			b.ReportMetric(float64(be.requests()-before)/float64(i), "requests/op")
		})
	}
}

func benchKey(i int) string { return fmt.Sprintf("wordle:games:%06d", i) }

func seedBench(b *testing.B, s kv.Store, n int) {
	b.Helper()
	entries := make([]kv.Entry, n)
	for i := range entries {
		entries[i] = kv.Entry{Key: benchKey(i), Value: []byte(`{"word":"apple"}`)}
	}
	for start := 0; start < n; start += 10_000 {
		if err := s.(kv.BulkPutter).PutMany(b.Context(), entries[start:min(start+10_000, n)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	bench(b, 1000, func(b *testing.B, s kv.Store, i int) {
		if _, err := s.Get(b.Context(), benchKey(i%1000)); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkGetMissing(b *testing.B) {
	bench(b, 0, func(b *testing.B, s kv.Store, i int) {
		if _, err := s.Get(b.Context(), "wordle:games:missing"); err != kv.ErrNotFound {
			b.Fatal(err)
		}
	})
}

func BenchmarkPut(b *testing.B) {
	v := []byte(`{"word":"apple","guesses":["crane"]}`)
	bench(b, 0, func(b *testing.B, s kv.Store, i int) {
		if err := s.Put(b.Context(), benchKey(i%1000), v, kv.PutOptions{TTL: time.Hour}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkDelete(b *testing.B) {
	bench(b, 0, func(b *testing.B, s kv.Store, i int) {
		if err := s.Delete(b.Context(), benchKey(i%1000)); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkListPage reads one page of 100 keys; cfkv also reads each key's
// expiry at the server, as Workers KV lists them.
func BenchmarkListPage(b *testing.B) {
	bench(b, 1000, func(b *testing.B, s kv.Store, i int) {
		res, err := s.List(b.Context(), kv.ListOptions{Prefix: "wordle:", Limit: 100})
		if err != nil || len(res.Keys) != 100 {
			b.Fatal(len(res.Keys), err)
		}
	})
}

// BenchmarkListAll10000 lists 10,000 keys in pages of 1000.
func BenchmarkListAll10000(b *testing.B) {
	bench(b, 10_000, func(b *testing.B, s kv.Store, i int) {
		n, cursor := 0, ""
		for {
			res, err := s.List(b.Context(), kv.ListOptions{Prefix: "wordle:", Cursor: cursor})
			if err != nil {
				b.Fatal(err)
			}
			n += len(res.Keys)
			if res.Done {
				break
			}
			cursor = res.Cursor
		}
		if n != 10_000 {
			b.Fatal(n)
		}
	})
}

func BenchmarkGetMany100(b *testing.B) {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = benchKey(i * 7)
	}
	bench(b, 1000, func(b *testing.B, s kv.Store, i int) {
		got, err := s.(kv.BulkGetter).GetMany(b.Context(), keys)
		if err != nil || len(got) != 100 {
			b.Fatal(len(got), err)
		}
	})
}

func BenchmarkPutMany10000(b *testing.B) {
	entries := make([]kv.Entry, 10_000)
	for i := range entries {
		entries[i] = kv.Entry{Key: benchKey(i), Value: []byte(`{"word":"apple","guesses":["crane"]}`)}
	}
	bench(b, 0, func(b *testing.B, s kv.Store, i int) {
		if err := s.(kv.BulkPutter).PutMany(b.Context(), entries); err != nil {
			b.Fatal(err)
		}
	})
}
