package dualwrite_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// More values unsettled than one bulk read may return (kvfault's
// MaxBulkBytes stands for Workers KV's 25 MiB, at a size a unit test can
// afford): every key settles, the one too large for any batch read alone, and the small keys
// batched with the large ones settle too.
func TestVerificationSettlesValuesPastTheBulkLimit(t *testing.T) {
	const limit = 1000
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: -1, RepairInterval: never},
		func(s *setup) { s.pc.MaxBulkBytes, s.sc.MaxBulkBytes = limit, limit })
	sizes := map[string]int{"m:huge": limit + 1, "m:large": 640, "m:medium": 40}
	for i := range 20 {
		sizes[fmt.Sprintf("m:small%02d", i)] = 1 + i
	}
	for k, n := range sizes {
		e.put(k, string(bytes.Repeat([]byte{'x'}, n)), kv.PutOptions{})
	}
	e.flush()
	if st := e.store.Stats(); st.Unsettled != len(sizes) {
		t.Fatalf("%d keys unsettled before verification, want %d", st.Unsettled, len(sizes))
	}
	n, err := e.store.Settle(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	st := e.store.Stats()
	if n != len(sizes) || st.Unsettled != 0 || st.Dirty != 0 {
		t.Fatalf("Settle compared %d keys; %d unsettled and %d dirty left, want all %d settled", n, st.Unsettled, st.Dirty, len(sizes))
	}
}

// A copy's timeout allows for its bytes: a 2 MiB copy that takes 2 s to a
// shadow whose ShadowTimeout is 1 s completes (1 s + 2 s at 1 MiB/s),
// while a small copy started after it on another lane is still cut off at
// its own, earlier deadline.
func TestCopyTimeoutGrowsWithTheValue(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, ShadowTimeout: time.Second, Lanes: 64,
		RepairInterval: never, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	e.shadow.SetLatency(2*time.Second, 0)
	e.put("m:large", string(bytes.Repeat([]byte{'x'}, 2<<20)), kv.PutOptions{})
	// The repair loop's timer, the copy's latency and the watchdog's.
	waitFor(t, "the large copy and the watchdog to wait", func() bool { return e.shadow.Stats().InFlight == 1 && e.clk.Timers() == 3 })
	small := "m:small"
	for i := 0; dualwrite.LaneOf(small, 64) == dualwrite.LaneOf("m:large", 64); i++ {
		small = fmt.Sprintf("m:small%d", i)
	}
	e.put(small, "v", kv.PutOptions{})
	waitFor(t, "both copies to wait", func() bool { return e.shadow.Stats().InFlight == 2 })
	// The small copy's deadline precedes the one the watchdog slept until.
	e.clk.Advance(time.Second)
	waitFor(t, "the small copy's timeout", func() bool { return e.store.Stats().Drops[dualwrite.DropTimeout] >= 1 })
	e.clk.Advance(time.Second)
	e.flush()
	st := e.store.Stats()
	if dirty := e.store.DirtyKeys(); st.Drops[dualwrite.DropTimeout] != 1 || !slices.Equal(dirty, []string{small}) {
		t.Fatalf("timeouts %d (want 1, the small copy's); dirty keys %v, want only %s", st.Drops[dualwrite.DropTimeout], dirty, small)
	}
	if v, err := e.smem.Get(context.Background(), "m:large"); err != nil || len(v) != 2<<20 {
		t.Fatalf("the large copy: %d bytes, %v", len(v), err)
	}
}

// A repair reads the key's current copy before it writes it, and a store
// whose bulk read cannot return a value past its limit even alone (Workers
// KV, the copy in the live stage: a 25 MiB value with metadata) has it read
// with its own read, and repaired (kvfault's MaxBulkBytes stands for the
// 25 MiB).
func TestRepairOfAValuePastTheBulkLimit(t *testing.T) {
	const limit = 100
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	}, func(s *setup) { s.sc.MaxBulkBytes = limit })
	e.put("m:huge", strings.Repeat("x", limit+1), kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(true)
	e.put("m:huge", strings.Repeat("y", limit+1), kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(false)
	e.repair()
	if st := e.store.Stats(); st.Repairs[dualwrite.RepairFailed] != 0 {
		t.Fatalf("repairs %v", st.Repairs)
	}
	sameContents(t, e.pmem, e.smem)
}
