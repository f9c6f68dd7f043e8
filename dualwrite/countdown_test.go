package dualwrite_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The flip's countdown is the truth: in Handover the fence's Remaining
// counts down to the moment the full comparison is due (the fence interval
// and two consistency windows after the handover began), and the
// comparison starts then, with no flip asked and no repair pass due for an
// hour; the same after a second way into Handover (the guide's flip waited
// 247 s for 185: the comparison waited for the next repair pass, and the
// countdown stood at that pass's interval).
func TestTheHandoverComparisonStartsWhenDue(t *testing.T) {
	const fence = 10 * time.Second
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: fence, RepairInterval: time.Hour})
	ctx := e.ctx()
	e.put("wordle:a", "v", kv.PutOptions{})
	e.flush()
	due := fence + 2*window
	waitFor(t, "the repair loop parked on its timer", func() bool { return e.clk.Timers() > 0 })
	for elapsed := time.Duration(0); elapsed < due; elapsed += 50 * time.Second {
		if f := e.store.Fence(); f.Compared || f.Remaining != due-elapsed {
			t.Fatalf("%s into the handover: remaining %s, compared %v; want %s to the comparison", elapsed, f.Remaining, f.Compared, due-elapsed)
		}
		e.clk.Advance(min(50*time.Second, due-elapsed))
	}
	waitFor(t, "the comparison, started when due", func() bool { return e.store.Fence().Compared })
	if f := e.store.Fence(); !f.Clear() || f.Remaining != 0 {
		t.Fatalf("after the comparison: %+v", f)
	}

	must(t, e.store.SetStage(ctx, dualwrite.Shadow))
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	if f := e.store.Fence(); f.Remaining != due {
		t.Fatalf("the second handover: remaining %s, want %s", f.Remaining, due)
	}
	e.clk.Advance(due)
	waitFor(t, "the second handover's comparison, started when due", func() bool { return e.store.Fence().Compared })
}
