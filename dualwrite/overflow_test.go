package dualwrite_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// A shadow far slower than the writes fills the lanes: memory stays within
// the configured bounds, every dropped write leaves its key dirty, and
// repair makes the stores identical.
func TestQueueOverflow(t *testing.T) {
	const lanes, depth, maxBytes = 2, 4, 6 << 10
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, Lanes: lanes, LaneDepth: depth, MaxQueueBytes: maxBytes,
		ConsistencyWindow: -1, ShadowTimeout: never, RepairInterval: never, // see drive
	})
	e.shadow.SetLatency(time.Hour, 0) // stuck until the clock moves
	value := strings.Repeat("x", 1<<10)
	const writes = 300
	for i := range writes {
		e.put(key(i), value, kv.PutOptions{})
		st := e.store.Stats()
		// Each lane holds LaneDepth jobs plus the one its worker runs.
		if st.Queued > lanes*(depth+1) || st.MaxLaneDepth > depth || st.QueuedBytes > maxBytes {
			t.Fatalf("after %d writes: queued %d, deepest lane %d, %d bytes", i+1, st.Queued, st.MaxLaneDepth, st.QueuedBytes)
		}
	}
	st := e.store.Stats()
	dropped := st.Drops[dualwrite.DropLaneFull]
	if dropped == 0 || int(dropped) != st.Dirty || st.Queued+int64(dropped) != writes {
		t.Fatalf("queued %d + dropped %d != %d writes, or dirty %d", st.Queued, dropped, writes, st.Dirty)
	}
	e.shadow.SetLatency(0, 0)
	e.drive(time.Hour)
	// Exactly the dropped keys are missing from the shadow, and dirty.
	dirty := e.store.DirtyKeys()
	for i := range writes {
		_, err := e.smem.Get(context.Background(), key(i))
		if missing := errors.Is(err, kv.ErrNotFound); missing != slices.Contains(dirty, key(i)) {
			t.Fatalf("%s: missing from the shadow %v, dirty %v", key(i), missing, !missing)
		}
	}
	e.repair()
	sameContents(t, e.pmem, e.smem)
}

// The dirty set is bounded too: past MaxDirty it counts, flags that a full
// reconciliation is needed, and a flip of authority is refused.
func TestDirtyOverflow(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Shadow, MaxDirty: 10, ConsistencyWindow: -1,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1000},
	})
	e.shadow.SetOutage(true)
	for i := range 50 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	e.flush()
	st := e.store.Stats()
	if st.Dirty != 10 || st.DirtyOverflow != 40 || !st.ReconciliationNeeded {
		t.Fatalf("dirty %d, overflow %d, reconcile %v", st.Dirty, st.DirtyOverflow, st.ReconciliationNeeded)
	}
	must(t, e.store.SetStage(e.ctx(), dualwrite.Handover))
	wantErr(t, "flip with an overflowed dirty set", e.store.SetStage(e.ctx(), dualwrite.Live), dualwrite.ErrUnsynced)
	e.shadow.SetOutage(false)
	e.repair()
	wantErr(t, "flip before acknowledging", e.store.SetStage(e.ctx(), dualwrite.Live), dualwrite.ErrUnsynced)
	if !e.store.AcknowledgeReconciliationAt(e.store.Stats().DirtyOverflow) {
		t.Fatal("the flag was not cleared")
	}
	must(t, e.store.SetStage(e.ctx(), dualwrite.Live))
}

// AcknowledgeReconciliationAt clears the flag only while no key overflowed
// since the count it is given: a reconciliation that began before the last
// overflow does not cover it.
func TestAcknowledgeReconciliationAt(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Shadow, MaxDirty: 2, ConsistencyWindow: -1,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1000},
	})
	e.shadow.SetOutage(true)
	for i := range 3 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	e.flush()
	seen := e.store.Stats().DirtyOverflow
	e.put(key(3), "v", kv.PutOptions{})
	e.flush()
	if e.store.AcknowledgeReconciliationAt(seen) || !e.store.Stats().ReconciliationNeeded {
		t.Fatal("cleared with a key overflowed since")
	}
	if !e.store.AcknowledgeReconciliationAt(e.store.Stats().DirtyOverflow) || e.store.Stats().ReconciliationNeeded {
		t.Fatal("not cleared at the current count")
	}
}

// The copies waiting in the lanes draw from the process's memory budget: one
// it cannot pay for is dropped as lane_full and its key marked dirty, and
// the bytes come back as the copies are applied.
func TestLanesDrawFromTheMemoryBudget(t *testing.T) {
	mem, err := membudget.New(membudget.Config{Limit: 64 << 20, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	held := mem.Limit() - 3<<10 // the requests under way leave room for three copies of 1 KiB
	if err := mem.Acquire(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, Memory: mem,
		ConsistencyWindow: -1, ShadowTimeout: never, RepairInterval: never,
	})
	e.shadow.SetLatency(time.Hour, 0) // stuck until the clock moves
	value := strings.Repeat("x", 1<<10)
	const writes = 10
	for i := range writes {
		e.put(key(i), value, kv.PutOptions{})
	}
	st := e.store.Stats()
	if dropped := st.Drops[dualwrite.DropLaneFull]; dropped != writes-3 || st.Dirty != writes-3 || mem.InUse() != held+3<<10 {
		t.Fatalf("dropped %d, dirty %d, in use %d: want %d dropped and dirty, the budget full", dropped, st.Dirty, mem.InUse(), writes-3)
	}
	e.shadow.SetLatency(0, 0)
	e.drive(time.Hour)
	if mem.InUse() != held {
		t.Fatalf("in use %d after the copies were applied, want %d", mem.InUse(), held)
	}
	e.repair()
	sameContents(t, e.pmem, e.smem)
}
