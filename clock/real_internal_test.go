package clock

import (
	"testing"
	"time"
)

// TestRealNowIsTimeNow checks that Real.Now's wall time and monotonic
// reading fall between two time.Now readings taken around it, however old
// its shared reading is.
func TestRealNowIsTimeNow(t *testing.T) {
	for range 10_000 {
		before := time.Now()
		got := Real{}.Now()
		after := time.Now()
		if got.Before(before) || got.After(after) {
			t.Fatalf("monotonic: %v not within [%v, %v]", got, before, after)
		}
		// The wall time is derived, so allow the skew between the two
		// clocks' readings within one time.Now.
		const skew = time.Millisecond
		if w := got.UnixNano(); w < before.UnixNano()-int64(skew) || w > after.UnixNano()+int64(skew) {
			t.Fatalf("wall: %d not within [%d, %d] ± %v", w, before.UnixNano(), after.UnixNano(), skew)
		}
	}
}

// TestRealNowRebases checks that a shared reading rebase old, or one from
// the future (a base from before a clock jump), is replaced by a fresh one.
func TestRealNowRebases(t *testing.T) {
	for _, shift := range []time.Duration{-rebase, -time.Hour, time.Second} {
		stale := &reading{time.Now().Add(shift)}
		base.Store(stale)
		before := time.Now()
		got := Real{}.Now()
		if got.Before(before) {
			t.Fatalf("shift %v: Now %v before %v: the stale reading was used", shift, got, before)
		}
		if b := base.Load(); b == stale || b.t.Before(before) {
			t.Fatalf("shift %v: the shared reading was not replaced", shift)
		}
	}
	fresh := base.Load()
	Real{}.Now()
	if base.Load() != fresh {
		t.Fatal("a fresh shared reading was replaced")
	}
}

var sinkTime time.Time

// BenchmarkNow compares Real.Now with time.Now, side by side.
func BenchmarkNow(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			sinkTime = time.Now()
		}
	})
	b.Run("Real.Now", func(b *testing.B) {
		for b.Loop() {
			sinkTime = Real{}.Now()
		}
	})
}
