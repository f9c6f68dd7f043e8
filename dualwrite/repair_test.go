package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Repair waits out the consistency window of a key's last write before it
// reads the authoritative store, which may serve an old value until then.
func TestRepairWaitsForSettle(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	e.shadow.SetOutage(true)
	e.put("wordle:k", "v", kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(false)
	if n := e.store.RepairDirty(); n != 0 {
		t.Fatalf("queued %d repairs inside the window", n)
	}
	e.clk.Advance(59 * time.Second)
	if n := e.store.RepairDirty(); n != 0 {
		t.Fatalf("queued %d repairs inside the window", n)
	}
	e.clk.Advance(time.Second)
	if n := e.store.RepairDirty(); n != 1 {
		t.Fatalf("queued %d repairs after the window, want 1", n)
	}
	e.flush()
	// The difference read after the window must hold for another one
	// before it is copied: the primary may have served a stale value.
	if st := e.store.Stats(); st.Dirty != 1 || st.Repairs[dualwrite.RepairDeferred] != 1 || e.smem.Len() != 0 {
		t.Fatalf("after the first repair pass: dirty %d, repairs %v, shadow %d keys", st.Dirty, st.Repairs, e.smem.Len())
	}
	e.clk.Advance(59 * time.Second)
	if n := e.store.RepairDirty(); n != 0 {
		t.Fatalf("queued %d repairs before the difference held a window", n)
	}
	e.clk.Advance(time.Second)
	if n := e.store.RepairDirty(); n != 1 {
		t.Fatalf("queued %d repairs a window after the difference, want 1", n)
	}
	e.flush()
	sameContents(t, e.pmem, e.smem)
	if st := e.store.Stats(); st.Dirty != 0 || st.Repairs[dualwrite.RepairCopied] != 1 {
		t.Fatalf("dirty %d, repairs %v", st.Dirty, st.Repairs)
	}
}

// A repair queued before a newer write of its key does not copy a value the
// authoritative store may not serve yet: it defers, the newer write's copy
// lands after it, and a later pass finishes the job.
func TestRepairNeverRacesNewerWrite(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ShadowTimeout: time.Hour, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	const k = "wordle:k"
	e.shadow.SetOutage(true)
	e.put(k, "v1", kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(false)
	e.clk.Advance(time.Minute)
	// Hold the lane: a slow write of another key of the same lane runs
	// first, so the repair and the newer write queue behind it.
	e.shadow.SetLatency(time.Second, 0)
	blocker := sameLane(k)
	e.put(blocker, "b", kv.PutOptions{})
	waitFor(t, "the lane to be busy", func() bool { return e.shadow.Stats().InFlight == 1 })
	if n := e.store.RepairDirty(); n != 1 {
		t.Fatalf("queued %d repairs", n)
	}
	e.put(k, "v2", kv.PutOptions{})
	e.drive(time.Second)
	st := e.store.Stats()
	if st.Repairs[dualwrite.RepairDeferred] != 1 || st.Dirty != 1 {
		t.Fatalf("repairs %v, dirty %d; want the repair deferred", st.Repairs, st.Dirty)
	}
	sameContents(t, e.pmem, e.smem)
	e.shadow.SetLatency(0, 0)
	e.clk.Advance(time.Minute)
	e.repair()
	sameContents(t, e.pmem, e.smem)
}

// sameLane finds another key in k's lane under the default lane count (the
// lane is the FNV-1a hash modulo the lanes).
func sameLane(k string) string {
	lane := fnv(k) % dualwrite.DefaultLanes
	for i := 0; ; i++ {
		if c := key(i); fnv(c)%dualwrite.DefaultLanes == lane && c != k {
			return c
		}
	}
}

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// The repair loop runs every RepairInterval on the Store's clock.
func TestRepairLoop(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Live, RepairInterval: 5 * time.Minute, ConsistencyWindow: -1,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	e.primary.SetOutage(true) // in live the primary is the copy
	e.put("wordle:k", "v", kv.PutOptions{TTL: time.Hour})
	e.flush()
	e.primary.SetOutage(false)
	e.clk.Advance(5*time.Minute - time.Second)
	if st := e.store.Stats(); st.Repairs[dualwrite.RepairCopied] != 0 || st.Queued != 0 {
		t.Fatalf("repaired before the interval: %+v", st.Repairs)
	}
	// The loop's goroutine may not have set its timer when the test
	// began; time moves in small steps until it has run.
	waitFor(t, "the repair", func() bool {
		if e.store.Stats().Repairs[dualwrite.RepairCopied] == 1 {
			return true
		}
		e.clk.Advance(time.Second)
		return false
	})
	e.flush()
	sameContents(t, e.pmem, e.smem)
}

// Close drains the lanes, and every call after it fails with kv.ErrClosed.
func TestCloseDrains(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1}, realLatency)
	e.shadow.SetLatency(100*time.Microsecond, 0)
	for i := range 50 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	must(t, e.store.Close(context.Background()))
	sameContents(t, e.pmem, e.smem)
	must(t, e.store.Close(context.Background())) // again: nil
	ctx := e.ctx()
	_, errGet := e.store.Get(ctx, "k")
	_, errEntry := e.store.GetEntry(ctx, "k")
	_, errList := e.store.List(ctx, kv.ListOptions{})
	for what, err := range map[string]error{
		"Get": errGet, "GetEntry": errEntry, "List": errList,
		"Put":      e.store.Put(ctx, "k", nil, kv.PutOptions{}),
		"Delete":   e.store.Delete(ctx, "k"),
		"SetStage": e.store.SetStage(ctx, dualwrite.Handover),
		"Flush":    e.store.Flush(ctx),
	} {
		wantErr(t, what+" after Close", err, kv.ErrClosed)
	}
}

// When Close's context ends first, the operations under way are cancelled,
// those left are counted, their keys are dirty, and every goroutine the
// Store started has stopped.
func TestCloseGivesUp(t *testing.T) {
	base := goroutines()
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 2, LaneDepth: 8, ShadowTimeout: time.Hour})
	e.shadow.SetLatency(time.Hour, 0)
	for i := range 10 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	waitFor(t, "the copies to be stuck", func() bool { return e.shadow.Stats().InFlight > 0 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantErr(t, "Close with an ended context", e.store.Close(ctx), context.Canceled)
	st := e.store.Stats()
	if st.Drops[dualwrite.DropClosed] != 10 || st.Dirty != 10 || st.LeftAtClose == 0 {
		t.Fatalf("drops %v, dirty %d, left %d", st.Drops, st.Dirty, st.LeftAtClose)
	}
	waitFor(t, "the Store's goroutines to end", func() bool { return goroutines() <= base })
}
