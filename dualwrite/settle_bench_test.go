package dualwrite

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// settleBenchKeys are the sizes of the settle set the benchmarks measure.
var settleBenchKeys = []int{1_000, 10_000, 100_000, 1_000_000}

// benchDue is how many keys are due in each pass the benchmark makes.
const benchDue = 100

var benchBase = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// benchSet is a settle set of n unsettled keys of 21 bytes, readied one
// millisecond apart, as a stream of writes leaves it.
func benchSet(n int) *settleSet {
	d := newSettleSet(n, 0, false)
	for i := range n {
		at := benchBase.Add(time.Duration(i) * time.Millisecond)
		d.mark(fmt.Sprintf("wordle:games:%08d", i), MarkUnsettled, at, at, 0, byStore)
	}
	return d
}

// scanDue is what due did before the timeline, kept as the baseline: a
// walk of the whole map under the set's lock.
func (d *settleSet) scanDue(m Mark, cutoff time.Time, limit int) []settleRef {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := nanos(cutoff)
	var out []settleRef
	for k, e := range d.keys {
		if len(out) >= limit {
			break
		}
		if e.mark == m && !e.queued && e.copies == 0 && e.ready <= c {
			out = append(out, settleRef{key: k, gen: e.gen, held: e.held != nil})
		}
	}
	return out
}

// BenchmarkSettleSetDue measures a verification pass's search for the keys
// due (the oldest 100) in a settle set of 1,000 to 1,000,000 keys, all of
// it under the lock that writes take: through the timeline, side by side
// with the scan of the whole set it replaced. ns/due-key is the time a due
// key costs; the timeline's stays flat as the set grows.
func BenchmarkSettleSetDue(b *testing.B) {
	cutoff := benchBase.Add((benchDue - 1) * time.Millisecond)
	for _, n := range settleBenchKeys {
		d := benchSet(n)
		for _, way := range []struct {
			name string
			due  func(Mark, time.Time, int) []settleRef
		}{{"timeline", func(m Mark, c time.Time, n int) []settleRef { return d.due(m, c, n, noFleet) }}, {"scan", d.scanDue}} {
			b.Run(fmt.Sprintf("keys=%d/%s", n, way.name), func(b *testing.B) {
				for b.Loop() {
					if got := way.due(MarkUnsettled, cutoff, n); len(got) != benchDue {
						b.Fatalf("%d keys due, want %d", len(got), benchDue)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchDue, "ns/due-key")
			})
		}
	}
}

// BenchmarkSettleSetMemory measures the heap a settle set of 1,000 to
// 1,000,000 unsettled keys takes: B/key is everything (the map, the entry
// and the key's own bytes, 21 here, in a 24-byte allocation), entry-B/key
// the same without the key's bytes.
func BenchmarkSettleSetMemory(b *testing.B) {
	for _, n := range settleBenchKeys {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				d := benchSet(n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perKey = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
				runtime.KeepAlive(d)
			}
			b.ReportMetric(perKey, "B/key")
			b.ReportMetric(perKey-24, "entry-B/key")
		})
	}
}

// BenchmarkSettleSetChurn measures a settle set of 10,000 keys in a steady
// stream: each op marks a key new to the set and settles the oldest, as
// writes of new keys and their verification do. With the free list a new
// key allocates nothing (allocs/op 0).
func BenchmarkSettleSetChurn(b *testing.B) {
	const n = 10_000
	keys := make([]string, 2*n)
	for i := range keys {
		keys[i] = fmt.Sprintf("wordle:games:%08d", i)
	}
	d := newSettleSet(2*n, 0, false)
	at := benchBase
	for i := range n {
		d.mark(keys[i], MarkUnsettled, at, at, 0, byStore)
	}
	b.ReportAllocs()
	i := n
	for b.Loop() {
		at = at.Add(time.Millisecond)
		d.mark(keys[i%(2*n)], MarkUnsettled, at, at, 0, byStore)
		old := keys[(i-n)%(2*n)]
		d.mu.Lock()
		gen := d.keys[old].gen
		d.mu.Unlock()
		if !d.settle(settleRef{key: old, gen: gen}) {
			b.Fatal("the oldest key did not settle")
		}
		i++
	}
}
