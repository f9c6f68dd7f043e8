package dualwrite

import (
	"fmt"
	"testing"
	"time"
)

// The settle set remembers the latest maxFree settled writes and lets the
// oldest go first, whatever order their keys settled in: pastMark rises to
// the oldest write let go, not to the newest of all.
func TestSettledWritesAreLetGoOldestFirst(t *testing.T) {
	d := newSettleSet(2*maxFree, 0, false)
	key := func(i int) string { return fmt.Sprintf("wordle:s%05d", i) }
	at := func(i int) time.Time { return benchBase.Add(time.Duration(i) * time.Millisecond) }
	for i := maxFree; i >= 0; i-- { // settled newest write first
		d.mark(key(i), MarkUnsettled, at(i+1), at(i+1), 0, byStore)
		if !d.settle(settleRef{key: key(i), gen: d.keys[key(i)].gen}) {
			t.Fatalf("%s did not settle", key(i))
		}
	}
	for _, c := range []struct {
		key   string
		acked int
		newer bool
	}{
		{key(0), 0, false}, {key(0), 1, true}, // let go: older than pastMark, at(1)
		{key(1), 1, false}, {key(1), 2, true}, // remembered: its own write, at(2)
		{key(maxFree), maxFree, false}, {key(maxFree), maxFree + 1, true},
		{"wordle:never", 0, false}, {"wordle:never", 1, true},
	} {
		if got := d.newer(c.key, at(c.acked)); got != c.newer {
			t.Errorf("newer(%s, at(%d)) = %v, want %v", c.key, c.acked, got, c.newer)
		}
	}
	// One more, the newest: the oldest remembered, key 1's at(2), goes.
	d.mark("wordle:new", MarkUnsettled, at(maxFree+2), at(maxFree+2), 0, byStore)
	d.settle(settleRef{key: "wordle:new", gen: d.keys["wordle:new"].gen})
	if d.newer("wordle:never", at(1)) || !d.newer("wordle:never", at(2)) || d.newer(key(2), at(2)) {
		t.Errorf("after one more settled: pastMark %v, want at(2), key 2 still remembered", timeOf(d.pastMark))
	}
	if len(d.keys) > maxFree || d.size() != 0 {
		t.Fatalf("%d entries kept, %d in the set; want at most %d, 0", len(d.keys), d.size(), maxFree)
	}
}
