package dualwrite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The flip from handover to live waits a fence interval after the stage
// began, and until every key a
// copy wrote last is verified against the primary after the window; a key
// the Store wrote itself needs no such wait.
func TestFenceHoldsTheFlip(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, FenceInterval: dualwrite.DefaultFenceInterval, RepairInterval: time.Hour})
	ctx := e.ctx()
	t0 := e.clk.Now()
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	held := func(what string, want ...string) dualwrite.FenceStatus {
		t.Helper()
		f := e.store.Fence()
		err := e.store.SetStage(ctx, dualwrite.Live)
		if !errors.Is(err, dualwrite.ErrUnsynced) || e.store.Stage() != dualwrite.Handover || f.Clear() || f.Remaining <= 0 {
			t.Fatalf("%s: flip = %v, fence %+v", what, err, f)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) || !strings.Contains(strings.Join(f.HeldBy, "; "), w) {
				t.Fatalf("%s: %q not in %v / %+v", what, w, err, f)
			}
		}
		return f
	}
	compareFrom := t0.Add(dualwrite.DefaultFenceInterval + 2*window)
	if f := held("at once", "the stage began 0s ago: the fence waits 1m5s more", "the full comparison with Workers KV starts in 3m5s"); f.Remaining != dualwrite.DefaultFenceInterval+2*window || !f.CompareFrom.Equal(compareFrom) {
		t.Fatalf("remaining %s", f.Remaining)
	}

	// A binding copy 10 s in does not restart the interval (a client
	// could hold the flip so), but its key must be verified.
	e.clk.Advance(10 * time.Second)
	must(t, e.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:tee", Value: []byte("v"), At: e.clk.Now()}}))
	must(t, e.pmem.Put(ctx, "wordle:tee", []byte("v"), kv.PutOptions{})) // the binding wrote it
	e.flush()
	e.clk.Advance(49 * time.Second) // the copy is not a window old yet: no verification reads it
	if f := held("a copy 49 s ago", "the stage began 59s ago", "1 keys last written by a binding copy"); f.IngestUnverified != 1 ||
		!f.LastBindingCopy.Equal(t0.Add(10*time.Second)) || !f.QuietUntil.Equal(t0.Add(dualwrite.DefaultFenceInterval)) {
		t.Fatalf("fence %+v", f)
	}
	// A write through the Store itself does not hold the flip back.
	e.put("wordle:proxy", "p", kv.PutOptions{})
	e.flush()
	// The copy's key is verified when its window ends (RepairInterval is
	// an hour here), and the countdown is then the full comparison's.
	e.clk.Advance(17 * time.Second)
	waitFor(t, "the copy's key verified once its window ended", func() bool { return e.store.Fence().IngestUnverified == 0 })
	if f := e.store.Fence(); len(f.HeldBy) != 1 || f.Remaining != compareFrom.Sub(e.clk.Now()) {
		t.Fatalf("the interval over, the copy's key verified, the full comparison not started: %+v", f)
	}
	// The full comparison starts two consistency windows after the
	// interval (an isolate cut off from the proxy may read the stage key
	// a window late, and its write shows a window later).
	e.clk.Advance(compareFrom.Sub(e.clk.Now()))
	waitFor(t, "the full comparison, started when due", func() bool { return e.store.Fence().Compared })
	// Nor does a write through the Store now, unverified.
	e.put("wordle:proxy2", "p2", kv.PutOptions{})
	e.flush()
	must(t, e.store.SetStage(ctx, dualwrite.Live))
	// Verified: the copy's key at its window's end, the proxy's first write
	// at the comparison's pass.
	waitFor(t, "the comparison's pass verifying the proxy's first write", func() bool { return e.store.Stats().Verifications[compare.Match] == 2 })
	if st := e.store.Stats(); st.Unsettled != 1 {
		t.Fatalf("unsettled %d, verifications %v: the proxy's own key is still in the set, and must not hold the flip", st.Unsettled, nonzero(st.Verifications))
	}

	// The way back waits for late copies the same way, without the
	// stage's own interval.
	if f := e.store.Fence(); !f.Clear() {
		t.Fatalf("fence in live: %+v", f)
	}
}
