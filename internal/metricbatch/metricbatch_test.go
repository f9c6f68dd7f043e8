package metricbatch_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/internal/metricbatch"
)

// TestAddRecordsEachFullBatchOnce adds 2.5 batches' worth: Add records the
// first two full, in order, Flush the rest, and every value comes out once.
func TestAddRecordsEachFullBatchOnce(t *testing.T) {
	var b metricbatch.Batch[int]
	var out []int
	full := 0
	record := func(s []int) {
		if len(s) == metricbatch.Size {
			full++
		}
		out = append(out, s...)
	}
	n := metricbatch.Size*2 + metricbatch.Size/2
	for i := range n {
		b.Add(i, record)
	}
	if full != 2 || len(out) != 2*metricbatch.Size {
		t.Fatalf("full batches recorded: %d holding %d values, want 2 holding %d", full, len(out), 2*metricbatch.Size)
	}
	b.Flush(record)
	calls := 0
	b.Flush(func([]int) { calls++ })
	if calls != 0 {
		t.Errorf("Flush of an empty batch called record %d times, want 0", calls)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(out, want) {
		t.Errorf("values out of order or lost: %v", out)
	}
}

// TestRecordRunsWithNoLockHeld: a record that adds to the batch itself
// (the SDK calling back into instrumentation) must not deadlock, and its
// batch is not changed under it while it runs.
func TestRecordRunsWithNoLockHeld(t *testing.T) {
	var b metricbatch.Batch[int]
	var record func(s []int)
	depth := 0
	record = func(s []int) {
		keep := slices.Clone(s)
		if depth == 0 {
			depth++
			for i := range metricbatch.Size { // fills and records another batch
				b.Add(1000+i, record)
			}
			depth--
		}
		if !slices.Equal(s, keep) {
			t.Errorf("a batch changed while its record ran")
		}
	}
	for i := range metricbatch.Size {
		b.Add(i, record)
	}
}

// TestConcurrentAddsLoseNothing: eight adders and a flusher beside them;
// each value is recorded exactly once.
func TestConcurrentAddsLoseNothing(t *testing.T) {
	var b metricbatch.Batch[int]
	var mu sync.Mutex
	seen := map[int]int{}
	keep := func(s []int) {
		mu.Lock()
		for _, v := range s {
			seen[v]++
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				b.Flush(keep)
			}
		}
	}()
	const adders, each = 8, 5000
	for a := range adders {
		wg.Go(func() {
			for i := range each {
				b.Add(a*each+i, keep)
			}
		})
	}
	wg.Wait()
	close(stop)
	<-flushed
	b.Flush(keep)
	if len(seen) != adders*each {
		t.Fatalf("%d values seen, want %d", len(seen), adders*each)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("value %d seen %d times", v, n)
		}
	}
}
