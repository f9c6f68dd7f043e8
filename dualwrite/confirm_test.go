package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A divergence is confirmed only when the same difference holds for a
// window: a shadow that changed between two verifications restarts the
// wait, and the third read, finding the second difference again, confirms
// it.
func TestConfirmationNeedsTheSameDifference(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{}))
	p.flush()
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("x"), kv.PutOptions{}))
	p.settle()
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("y"), kv.PutOptions{})) // another copy landed
	p.settle()
	if st := p.store.Stats(); st.Verifications[compare.Suspected] != 2 || st.Confirmed != 0 || len(p.sink.records()) != 0 {
		t.Fatalf("after a changed difference: verifications %v, confirmed %d", nonzero(st.Verifications), st.Confirmed)
	}
	p.settle()
	if st := p.store.Stats(); st.Confirmed != 1 || st.Verifications[compare.ValueMismatch] != 1 {
		t.Fatalf("after the same difference a window later: verifications %v, confirmed %d", nonzero(st.Verifications), st.Confirmed)
	}
	p.repairedOnce("wordle:k", "v")
}

// Two instances: this Store wrote v1; another instance writes v2, then v3,
// each just inside this Store's verification window, and its copies land,
// while the primary serves the value before each write for a window. Each
// verification sees another difference (stale primary, newer shadow), so
// none is confirmed; once the primary catches up the key settles.
func TestStaleReadsNeverConfirm(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: window, RepairInterval: never})
	ctx := context.Background()
	const k = "wordle:k"
	e.put(k, "v1", kv.PutOptions{})
	e.flush()
	e.primary.SetStaleRate(1)
	e.primary.SetStaleWindow(window)
	for _, v := range []string{"v2", "v3"} {
		e.clk.Advance(window - time.Second)
		must(t, e.primary.Put(ctx, k, []byte(v), kv.PutOptions{})) // the other instance's write
		must(t, e.smem.Put(ctx, k, []byte(v), kv.PutOptions{}))    // and its copy
		e.clk.Advance(time.Second)
		if _, err := e.store.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.store.Stats(); st.Verifications[compare.Suspected] != 2 || st.Confirmed != 0 || len(e.sink.records()) != 0 {
		t.Fatalf("verifications %v, confirmed %d, records %v", nonzero(st.Verifications), st.Confirmed, e.sink.records())
	}
	e.clk.Advance(window)
	if _, err := e.store.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.store.Stats(); st.Unsettled+st.Dirty != 0 || st.Cleared != 1 || st.Confirmed != 0 {
		t.Fatalf("after the primary caught up: unsettled %d, dirty %d, cleared %d, confirmed %d", st.Unsettled, st.Dirty, st.Cleared, st.Confirmed)
	}
}

// This Store's copy of v1 is lost; another instance writes v2 just inside
// the window and its copy lands, while the primary still serves v1. The
// repair never copies v1 over v2: it holds the difference, and a window
// later, the primary caught up, finds both stores equal.
func TestRepairNeverMovesTheShadowBackwards(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: window, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	ctx := context.Background()
	const k = "wordle:k"
	e.shadow.SetOutage(true)
	e.put(k, "v1", kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(false)
	e.primary.SetStaleRate(1)
	e.primary.SetStaleWindow(window)
	e.clk.Advance(window - time.Second)
	must(t, e.primary.Put(ctx, k, []byte("v2"), kv.PutOptions{}))
	must(t, e.smem.Put(ctx, k, []byte("v2"), kv.PutOptions{}))
	e.clk.Advance(time.Second)
	for range 2 {
		if n := e.store.RepairDirty(); n != 1 {
			t.Fatalf("queued %d repairs, want 1", n)
		}
		e.flush()
		if v, err := e.smem.Get(ctx, k); err != nil || string(v) != "v2" {
			t.Fatalf("shadow %q, %v: the repair moved it back", v, err)
		}
		e.clk.Advance(window)
	}
	st := e.store.Stats()
	if st.Repairs[dualwrite.RepairCopied] != 0 || st.Repairs[dualwrite.RepairDeferred] != 1 || st.Repairs[dualwrite.RepairUnneeded] != 1 || st.Dirty+st.Unsettled != 0 {
		t.Fatalf("repairs %v, dirty %d, unsettled %d", st.Repairs, st.Dirty, st.Unsettled)
	}
}

// A copy that waited in its lane longer than the window less ShadowTimeout
// is dropped as timed out, its key dirty, rather than landing more than a
// window after its write: no copy in flight outlives the window that the
// confirmation rule waits.
func TestCopyTooLateIsDropped(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: window, ShadowTimeout: 5 * time.Second, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	}, realLatency)
	const k = "wordle:late"
	e.shadow.SetLatency(time.Hour, 0)
	e.put(sameLane(k), "b", kv.PutOptions{})
	waitFor(t, "the lane to be busy", func() bool { return e.shadow.Stats().InFlight == 1 })
	e.put(k, "v", kv.PutOptions{})
	e.shadow.SetLatency(0, 0)
	e.clk.Advance(window - 4*time.Second) // the watchdog ends the blocker; k has waited 56 s
	e.flush()
	if _, err := e.smem.Get(context.Background(), k); !isNotFound(err) {
		t.Fatalf("the late copy landed: %v", err)
	}
	if st := e.store.Stats(); st.Drops[dualwrite.DropTimeout] != 2 || st.Dirty != 2 {
		t.Fatalf("drops %v, dirty %d; want the blocker and the late copy", st.Drops, st.Dirty)
	}
}
