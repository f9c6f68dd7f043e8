package dualwrite_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy queued behind a slow one reports, as Waited, the time it spent in
// its lane: exactly the time the clock moved while the first copy ran.
func TestOpEventWaited(t *testing.T) {
	const slow = 300 * time.Millisecond
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, LaneDepth: 8, RepairInterval: never})
	e.shadow.SetLatency(slow, 0)
	e.put("wordle:a", "1", kv.PutOptions{})
	e.put("wordle:b", "2", kv.PutOptions{})

	// A copy waits on the shadow's latency timer, beside the repair
	// loop's and the watchdog's.
	inFlight := func() bool { return e.shadow.Stats().InFlight == 1 && e.clk.Timers() == 3 }
	waitFor(t, "the first copy to wait on the shadow", inFlight)
	e.clk.Advance(slow)
	waitFor(t, "the second copy to start", func() bool { return len(e.obs.opEvents()) == 1 && inFlight() })
	e.clk.Advance(slow)
	e.flush()

	got := e.obs.opEvents()
	if len(got) != 2 {
		t.Fatalf("%d OpEvents, want 2: %+v", len(got), got)
	}
	for i, want := range []time.Duration{0, slow} {
		if ev := got[i]; ev.Op != dualwrite.OpPut || ev.Outcome != dualwrite.OutcomeOK || ev.Waited != want || ev.Duration != slow {
			t.Errorf("OpEvent %d = %+v, want a put that waited %v and ran %v", i, ev, want, slow)
		}
	}
}

func TestStatsLaneCapacity(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 3, LaneDepth: 5})
	if st := e.store.Stats(); st.Lanes != 3 || st.LaneCapacity != 5 {
		t.Errorf("Stats: Lanes %d, LaneCapacity %d; want 3 and 5", st.Lanes, st.LaneCapacity)
	}
	e = newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	if st := e.store.Stats(); st.Lanes < 1 || st.LaneCapacity != dualwrite.DefaultLaneDepth {
		t.Errorf("Stats with defaults: Lanes %d, LaneCapacity %d; want at least 1 and %d", st.Lanes, st.LaneCapacity, dualwrite.DefaultLaneDepth)
	}
}
