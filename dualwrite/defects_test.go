package dualwrite_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// sameSlot returns two keys that share one of the Store's 4,096 slots (and
// so one lane).
func sameSlot() (string, string) {
	seen := map[uint64]string{}
	for i := 0; ; i++ {
		k := key(i)
		s := fnv(k) & 4095
		if other, ok := seen[s]; ok {
			return other, k
		}
		seen[s] = k
	}
}

// Repairing one dirty key does not defer the other dirty keys of its slot
// for another window: each key waits out its own last write only, and then
// the window its difference must hold (the confirmation rule) before the
// copy.
func TestRepairDoesNotDeferSlotNeighbours(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, RepairInterval: never,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	a, b := sameSlot()
	e.shadow.SetOutage(true)
	e.put(a, "va", kv.PutOptions{})
	e.put(b, "vb", kv.PutOptions{})
	e.flush()
	e.shadow.SetOutage(false)
	e.clk.Advance(time.Minute)
	for range 2 { // the difference is seen, then copied a window later
		if n := e.store.RepairDirty(); n != 2 {
			t.Fatalf("queued %d repairs, want 2", n)
		}
		e.flush()
		e.clk.Advance(time.Minute)
	}
	if st := e.store.Stats(); st.Dirty != 0 || st.Repairs[dualwrite.RepairCopied] != 2 || st.Repairs[dualwrite.RepairDeferred] != 2 {
		t.Fatalf("dirty %d, repairs %v: one key's repair deferred its slot neighbour", st.Dirty, st.Repairs)
	}
	sameContents(t, e.pmem, e.smem)
}

// A Flush waiting for room in a full lane holds nothing that a SetStage
// keeping the authoritative store, or a caller's write, would wait for.
func TestFlushDoesNotHoldStageChangeOrWrites(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, LaneDepth: 1, ShadowTimeout: never, RepairInterval: never})
	e.shadow.SetLatency(time.Hour, 0)
	e.put("wordle:a", "1", kv.PutOptions{})
	waitFor(t, "the copy to be stuck", func() bool { return e.shadow.Stats().InFlight == 1 })
	e.put("wordle:b", "1", kv.PutOptions{}) // fills the lane
	flushed := make(chan error, 1)
	go func() { flushed <- e.store.Flush(context.Background()) }()
	waitFor(t, "Flush to wait for room", func() bool { return stackHas("(*Store).sendBarriers") })

	// On failure, unstick the shadow so that the test can end.
	fail := func(msg string) {
		e.shadow.SetLatency(0, 0)
		e.clk.Advance(time.Hour)
		t.Fatal(msg)
	}
	staged := make(chan error, 1)
	go func() { staged <- e.store.SetStage(context.Background(), dualwrite.Shadow) }()
	select {
	case err := <-staged:
		must(t, err)
	case <-time.After(10 * time.Second): // a bound for a broken test only
		fail("SetStage waited for a Flush blocked on the other store")
	}
	put := make(chan error, 1)
	go func() { put <- e.store.Put(context.Background(), "wordle:c", []byte("1"), kv.PutOptions{}) }()
	select {
	case err := <-put:
		must(t, err)
	case <-time.After(10 * time.Second):
		fail("a caller's Put waited for the other store")
	}
	e.drive(time.Hour)
	must(t, <-flushed)
}

func stackHas(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
}

// When Close gives up, the copies in flight are counted with those still
// queued: LeftAtClose, the error and the dirty keys agree.
func TestCloseCountsInFlightCopies(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 2, LaneDepth: 8, ShadowTimeout: never})
	e.shadow.SetLatency(time.Hour, 0)
	for i := range 10 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	waitFor(t, "a copy in flight in each lane", func() bool { return e.shadow.Stats().InFlight == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.store.Close(ctx)
	wantErr(t, "Close with an ended context", err, context.Canceled)
	st := e.store.Stats()
	if st.LeftAtClose != 10 || st.Dirty != 10 || !strings.Contains(err.Error(), "10 operations undone (10 dirty keys)") {
		t.Fatalf("left %d, dirty %d, error %q: want 10 of each", st.LeftAtClose, st.Dirty, err)
	}
}
