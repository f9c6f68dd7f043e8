package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// scaleKeys are the settle set sizes of BenchmarkSettleSet.
var scaleKeys = []int{1_000, 10_000, 100_000, 1_000_000}

func marksOf(n int, m dualwrite.Mark) map[string]dualwrite.Mark {
	out := make(map[string]dualwrite.Mark, n)
	for i := range n {
		out[fmt.Sprintf("wordle:games:%08d", i*7919%n)] = m
	}
	return out
}

func openBench(b *testing.B) *Journal {
	b.Helper()
	// A small mark log: these benchmarks record nothing, and open
	// thousands of journals.
	j, err := Open(filepath.Join(b.TempDir(), "settle.db"), Options{LogSize: benchLogSize})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

const benchLogSize = 64 << 10

// discard closes j and removes its files: a benchmark opens thousands.
func discard(j *Journal) {
	_ = j.Close()
	_ = os.Remove(j.Path())
	_ = os.Remove(j.Path() + logSuffix)
}

func size(b *testing.B, j *Journal) int64 {
	b.Helper()
	n, err := j.Size()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkSettleSet measures the journal at 1,000 to 1,000,000 unsettled
// keys (keys of 21 bytes, fsync on): committing the whole set in one
// transaction, in key order as Commit does and, up to 10,000 keys, in the
// map's order as it did before (map-order); loading it on a restart (Load,
// ns/key); the file's bytes per key with the set in it; and the file's size
// once every key has settled (the commit that removes them compacts it).
func BenchmarkSettleSet(b *testing.B) {
	ctx := context.Background()
	for _, n := range scaleKeys {
		all := marksOf(n, dualwrite.MarkUnsettled)
		b.Run(fmt.Sprintf("keys=%d/commit", n), func(b *testing.B) {
			var perKey float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j := openBench(b)
				b.StartTimer()
				if err := j.Commit(ctx, all, false); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				perKey = float64(size(b, j)) / float64(n)
				discard(j)
				b.StartTimer()
			}
			b.ReportMetric(perKey, "file-B/key")
		})
		if n <= 10_000 {
			b.Run(fmt.Sprintf("keys=%d/commit-map-order", n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					j := openBench(b)
					keys := make([]string, 0, n)
					for k := range all {
						keys = append(keys, k)
					}
					b.StartTimer()
					err := j.db.Update(func(tx *bolt.Tx) error { return putMarks(tx.Bucket(bucketMarks), keys, all) })
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					discard(j)
					b.StartTimer()
				}
			})
		}
		b.Run(fmt.Sprintf("keys=%d/load", n), func(b *testing.B) {
			j := openBench(b)
			if err := j.Commit(ctx, all, false); err != nil {
				b.Fatal(err)
			}
			path := j.Path()
			_ = j.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j, err := Open(path, Options{LogSize: benchLogSize})
				if err != nil {
					b.Fatal(err)
				}
				marks, _, err := j.Load(ctx)
				if err != nil || len(marks) != n {
					b.Fatalf("Load: %d keys, %v", len(marks), err)
				}
				_ = j.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
		b.Run(fmt.Sprintf("keys=%d/settled", n), func(b *testing.B) {
			settled := marksOf(n, dualwrite.MarkSettled)
			var full, empty int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				j := openBench(b)
				if err := j.Commit(ctx, all, false); err != nil {
					b.Fatal(err)
				}
				full = size(b, j)
				b.StartTimer()
				if err := j.Commit(ctx, settled, false); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if k, err := j.Len(); err != nil || k != 0 {
					b.Fatalf("Len = %d, %v", k, err)
				}
				empty = size(b, j)
				discard(j)
				b.StartTimer()
			}
			b.ReportMetric(float64(full), "file-bytes-full")
			b.ReportMetric(float64(empty), "file-bytes-settled")
		})
	}
}
