package dualwrite_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// BenchmarkTeeReads measures what comparing reads costs the proxy, per
// read and side by side in one run: a batch of 100 tee reads through
// CompareReads, against 100 of the Store's own sampled Gets (CompareRate
// 1), each batch waited for with Flush, over memory stores.
func BenchmarkTeeReads(b *testing.B) {
	ctx := context.Background()
	const batch = 100
	open := func(b *testing.B) *dualwrite.Store {
		s, err := dualwrite.New(dualwrite.Config{
			Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{}),
			Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1, RepairInterval: never,
		}, dualwrite.WithLogger(discardLogger()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close(ctx) })
		for i := range benchKeys {
			must(b, s.Put(ctx, benchKey(i), benchValue, kv.PutOptions{}))
		}
		must(b, s.Flush(ctx))
		return s
	}
	check := func(b *testing.B, s *dualwrite.Store) {
		if st := s.Stats(); st.Comparisons[compare.Match] == 0 || st.Comparisons[compare.Suspected] != 0 {
			b.Fatalf("comparisons %v", st.Comparisons)
		}
	}
	b.Run("own-sampled-Get", func(b *testing.B) {
		s := open(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for j := range batch {
				if _, err := s.Get(ctx, benchKey(i*batch+j)); err != nil {
					b.Fatal(err)
				}
			}
			must(b, s.Flush(ctx))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/read")
		check(b, s)
	})
	b.Run("CompareReads", func(b *testing.B) {
		s := open(b)
		sum := sha256.Sum256(benchValue)
		reads := make([]dualwrite.TeeRead, batch)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			at := time.Now()
			for j := range reads {
				reads[j] = dualwrite.TeeRead{Key: benchKey(i*batch + j), Found: true, SHA256: sum, Length: len(benchValue), At: at}
			}
			if _, err := s.CompareReads(ctx, reads); err != nil {
				b.Fatal(err)
			}
			must(b, s.Flush(ctx))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/read")
		check(b, s)
	})
}
