package metricbatch_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/internal/metricbatch"
)

// TestAddReturnsEachFullBatchOnce adds 2.5 batches' worth: Add returns the
// first two full, in order, Take the rest, and every value comes out once.
func TestAddReturnsEachFullBatchOnce(t *testing.T) {
	var b metricbatch.Batch[int]
	var out []int
	n := metricbatch.Size*2 + metricbatch.Size/2
	for i := range n {
		if full := b.Add(i); full != nil {
			if len(full) != metricbatch.Size {
				t.Fatalf("Add returned %d values, want %d", len(full), metricbatch.Size)
			}
			out = append(out, full...)
			b.Recycle(full)
		}
	}
	if len(out) != 2*metricbatch.Size {
		t.Fatalf("full batches held %d values, want %d", len(out), 2*metricbatch.Size)
	}
	rest := b.Take()
	out = append(out, rest...)
	b.Recycle(rest)
	if got := b.Take(); got != nil {
		t.Errorf("Take after Take = %v, want nil", got)
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(out, want) {
		t.Errorf("values out of order or lost: %v", out)
	}
}

// TestARecycledSliceNeverHoldsLiveValues: a batch returned full and not yet
// recycled is the caller's alone, however many values arrive meanwhile.
func TestARecycledSliceNeverHoldsLiveValues(t *testing.T) {
	var b metricbatch.Batch[int]
	var first []int
	for i := range metricbatch.Size {
		first = b.Add(i)
	}
	keep := slices.Clone(first)
	for i := range 3 * metricbatch.Size { // other batches fill and are recycled
		if full := b.Add(1000 + i); full != nil {
			b.Recycle(full)
		}
	}
	if !slices.Equal(first, keep) {
		t.Errorf("a batch not recycled changed under its caller")
	}
}

// TestConcurrentAddsLoseNothing: eight adders and a taker beside them; each
// value is returned exactly once.
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
		b.Recycle(s)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	taken := make(chan struct{})
	go func() {
		defer close(taken)
		for {
			select {
			case <-stop:
				return
			default:
				keep(b.Take())
			}
		}
	}()
	const adders, each = 8, 5000
	for a := range adders {
		wg.Go(func() {
			for i := range each {
				if full := b.Add(a*each + i); full != nil {
					keep(full)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-taken
	keep(b.Take())
	if len(seen) != adders*each {
		t.Fatalf("%d values seen, want %d", len(seen), adders*each)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("value %d seen %d times", v, n)
		}
	}
}
