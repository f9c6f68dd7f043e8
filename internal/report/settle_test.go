package report_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
)

// With Settle, the keys that differ are read again Settle after the scan
// read them: one whose copy landed meanwhile agrees; one that changed (a
// newer write, its copy on its way) is left for later, named, and out of
// the gated parity; one written around the layer shows the same difference
// and fails the gate, run after run.
func TestSettleReadsDifferingKeysAgain(t *testing.T) {
	f := newFixture(t)
	p, s := f.primary, f.shadow
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c", "wordle:d", "wordle:e", "loldle-emoji:a", "loldle-emoji:b", "loldle-emoji:c", "loldle-emoji:d", "trading:x", "trading:y", "config", "Bad:x"} {
		_ = p.Delete(context.Background(), k)
		_ = s.Delete(context.Background(), k)
	}
	put(t, p, "wordle:ok", "same", 0)
	put(t, s, "wordle:ok", "same", 0)
	put(t, p, "wordle:around", "primary", 0)
	put(t, s, "wordle:around", "written around the layer", 0)
	gate := func(lands, moves string) *report.Report {
		t.Helper()
		put(t, p, "wordle:landing", lands, 0) // its copy is on its way
		put(t, p, "wordle:moving", moves+"1", 0)
		put(t, s, "wordle:moving", moves+"0", 0)
		cfg := f.config()
		cfg.Settle = 70 * time.Second
		done := make(chan *report.Report, 1)
		go func() {
			r, err := report.Run(context.Background(), cfg)
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		for f.clk.Timers() == 0 { // the run waits to read the differing keys again
			runtime.Gosched()
		}
		put(t, s, "wordle:landing", lands, 0)    // the copy landed
		put(t, p, "wordle:moving", moves+"2", 0) // a newer write
		put(t, s, "wordle:moving", moves+"1", 0) // and the older one's copy
		return advanceUntil(t, f.clk, done, 70*time.Second)
	}
	for i, v := range []string{"x", "y", "z"} {
		r := gate(v, v)
		st := r.Settle
		if st == nil || st.Rechecked != 3 || st.Settled != 1 || st.Held != 1 || st.Left != 1 {
			t.Fatalf("run %d: settle %+v; want 3 read again: 1 agreeing, 1 held, 1 left", i, st)
		}
		if r.Passed || r.Parity != 66.6666 || len(r.LeftForLater) != 1 || r.LeftForLater[0].Key != "wordle:moving" || r.LeftForLater[0].Kind != compare.ValueMismatch {
			t.Fatalf("run %d: passed %v, parity %v, left %+v; want a failing gate at 2 of 3, wordle:moving left", i, r.Passed, r.Parity, r.LeftForLater)
		}
		if k := r.Totals.Kinds; k[compare.Match] != 2 || k[compare.ValueMismatch] != 1 || k[compare.Pending] != 1 || k[compare.MissingInShadow] != 0 {
			t.Fatalf("run %d: kinds %v", i, k)
		}
		if len(r.Divergences) != 2 || r.Divergences[0].Key != "wordle:around" || r.Divergences[1].Kind != compare.Pending {
			t.Fatalf("run %d: records %+v", i, r.Divergences)
		}
		_ = p.Delete(context.Background(), "wordle:landing")
		_ = s.Delete(context.Background(), "wordle:landing")
	}
	// The write around the layer repaired: the gate passes under the same
	// traffic.
	put(t, s, "wordle:around", "primary", 0)
	if r := gate("w", "w"); !r.Passed || r.Settle.Left != 1 || r.Settle.Held != 0 {
		t.Fatalf("without the write around the layer: passed %v, settle %+v", r.Passed, r.Settle)
	}
}

// A repair's dry run (a backfill's first step) says what it would copy at
// once: it reads nothing again after Settle, which the gate's runs do.
func TestARepairDryRunDoesNotWaitToSettle(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Settle = 70 * time.Second
	cfg.Repair = report.Repair{Enabled: true}
	done := make(chan *report.Report, 1)
	go func() {
		r, err := report.Run(context.Background(), cfg)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.Settle != nil || r.Repair == nil || r.Repair.Applied || r.Repair.Puts == 0 {
			t.Fatalf("the dry run: settle %+v, repair %+v", r.Settle, r.Repair)
		}
	case <-time.After(30 * time.Second): // the fake clock never moves: a wait would never end
		t.Fatal("the dry run waited for the clock to read the differing keys again")
	}
}
