package dualwrite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
)

// A binding write whose copy never reaches the proxy (the Workers cut off
// from it right after the handover) is not erased by the flip: the fence's
// full comparison, started once no isolate can still write its binding,
// finds the key different, verification repairs MongoDB toward Workers KV,
// and only then does the flip go. A key MongoDB holds and Workers KV does
// not is deleted the same way. The stage key tells tees cut off from the
// proxy that the handover began, and is never listed, compared or copied.
func TestHandoverComparisonKeepsACopyThatNeverArrived(t *testing.T) {
	const fence = 10 * time.Second
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, FenceInterval: fence, RepairInterval: time.Hour})
	ctx := e.ctx()
	e.put("wordle:both", "same", kv.PutOptions{})
	must(t, e.smem.Put(ctx, "wordle:stray", []byte("only in MongoDB"), kv.PutOptions{}))
	e.flush()
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	if v := valueOf(t, e.pmem, dualwrite.StageKey); v != "handover" {
		t.Fatalf("%s = %q in the primary, want handover", dualwrite.StageKey, v)
	}
	page, err := e.store.List(ctx, kv.ListOptions{})
	must(t, err)
	for _, k := range page.Keys {
		if strings.HasPrefix(k, kv.ReservedPrefix) {
			t.Fatalf("the listing shows %s: %v", k, page.Keys)
		}
	}
	// An isolate on its lease writes its binding; the copy never comes.
	e.clk.Advance(time.Second)
	must(t, e.pmem.Put(ctx, "wordle:lost-copy", []byte("acknowledged"), kv.PutOptions{}))

	e.clk.Advance(fence) // the quiet interval is over, the comparison is due (window 1m: 2 more)
	if f := e.store.Fence(); f.Clear() || f.Compared {
		t.Fatalf("the fence is clear before the comparison: %+v", f)
	}
	e.clk.Advance(2 * window)
	waitFor(t, "the flip, once the comparison and the repairs are done", func() bool {
		err := e.store.SetStage(ctx, dualwrite.Live)
		if err != nil && !errors.Is(err, dualwrite.ErrUnsynced) {
			t.Fatal(err)
		}
		if err != nil {
			e.clk.Advance(window) // the repaired keys are verified a window later
		}
		return err == nil
	})
	if v := valueOf(t, e.smem, "wordle:lost-copy"); v != "acknowledged" {
		t.Fatalf("MongoDB holds %q for the write whose copy never came", v)
	}
	if _, err := e.smem.Get(ctx, "wordle:stray"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the key only MongoDB held survived the flip: %v", err)
	}
	if _, err := e.smem.Get(ctx, dualwrite.StageKey); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the stage key was copied to MongoDB: %v", err)
	}

	// Back to shadow, the stage key goes.
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	must(t, e.store.SetStage(ctx, dualwrite.Shadow))
	if _, err := e.pmem.Get(ctx, dualwrite.StageKey); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("%s stays in shadow: %v", dualwrite.StageKey, err)
	}
}

// A Store that begins past Shadow in tee mode (the first instance started
// in handover or live, or StageKey deleted behind the fleet's back) writes
// StageKey as the way into Handover does: without it, an isolate cut off
// from the proxy would read a binding that says nothing and serve it as
// authoritative, in live a binding that no longer is.
func TestAStoreThatBeginsPastShadowWritesTheStageKey(t *testing.T) {
	for _, stage := range []dualwrite.Stage{dualwrite.Handover, dualwrite.Live, dualwrite.Complete} {
		t.Run(stage.String(), func(t *testing.T) {
			e := newEnv(t, dualwrite.Config{Stage: stage, FenceInterval: 10 * time.Second, RepairInterval: time.Hour})
			waitFor(t, dualwrite.StageKey+" in the primary", func() bool {
				_, err := e.pmem.Get(e.ctx(), dualwrite.StageKey)
				return err == nil
			})
			if v := valueOf(t, e.pmem, dualwrite.StageKey); v != "handover" {
				t.Fatalf("%s = %q in the primary, want handover", dualwrite.StageKey, v)
			}
		})
	}
	// Before Handover, and in proxy mode alone (no fence), nothing is written.
	for _, cfg := range []dualwrite.Config{{Stage: dualwrite.Shadow, FenceInterval: 10 * time.Second}, {Stage: dualwrite.Live}} {
		e := newEnv(t, cfg)
		e.put("wordle:a", "1", kv.PutOptions{})
		e.flush()
		if _, err := e.pmem.Get(e.ctx(), dualwrite.StageKey); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("stage %s, fence %s: %s written: %v", cfg.Stage, cfg.FenceInterval, dualwrite.StageKey, err)
		}
	}
}

// A Store that begins in Handover with the primary down cannot write
// StageKey: the fence holds the flip to Live, saying why, until a later
// pass of the repair loop writes it.
func TestAnUnwrittenStageKeyHoldsTheFlip(t *testing.T) {
	const repair = time.Minute
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: time.Second, RepairInterval: repair},
		func(su *setup) { su.pc.Outage = true })
	ctx := e.ctx()
	holds := func() bool {
		for _, why := range e.store.Fence().HeldBy {
			if strings.Contains(why, dualwrite.StageKey+" cannot be read back") || strings.Contains(why, "until it reads back as written") {
				return true
			}
		}
		return false
	}
	if !holds() {
		t.Fatalf("the fence does not name %s: %+v", dualwrite.StageKey, e.store.Fence())
	}
	e.clk.Advance(3 * window) // the quiet interval and the comparison's windows
	if err := e.store.SetStage(ctx, dualwrite.Live); !errors.Is(err, dualwrite.ErrUnsynced) || !strings.Contains(err.Error(), dualwrite.StageKey+" cannot be read back") {
		t.Fatalf("the flip with %s unwritten: %v", dualwrite.StageKey, err)
	}
	e.primary.SetOutage(false)
	waitFor(t, dualwrite.StageKey+" written, then read back, once the primary answers", func() bool {
		if e.store.Stats().StageKey.Found == dualwrite.KeyVerified {
			return true
		}
		e.clk.Advance(repair)
		return false
	})
	if v := valueOf(t, e.pmem, dualwrite.StageKey); v != "handover" {
		t.Fatalf("%s = %q, want handover", dualwrite.StageKey, v)
	}
	if holds() {
		t.Fatalf("the fence still names %s once it is written: %+v", dualwrite.StageKey, e.store.Fence())
	}
}

// A stage key deleted in handover (through the bot's own binding, or any
// way around the proxy) is found by the read-back before the flip: the
// flip is held, the key written again and counted, and the handover's
// clock starts again, so that a write an isolate cut off from the proxy
// made to its binding while the key was gone (its copy never comes) is
// found by the full comparison run again, not erased by the flip. The
// flip goes once the key reads back as written and that comparison is
// done.
func TestADeletedStageKeyHoldsTheFlipUntilItReadsBack(t *testing.T) {
	const fence = 10 * time.Second
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, FenceInterval: fence, RepairInterval: time.Hour})
	ctx := e.ctx()
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	waitFor(t, "the key read back on the way into handover", func() bool { return e.store.Stats().StageKey.Found == dualwrite.KeyVerified })
	e.clk.Advance(fence + 2*window)
	waitFor(t, "the handover's comparison", func() bool {
		e.store.RepairDirty()
		return e.store.Fence().Compared
	})
	if f := e.store.Fence(); !f.Clear() {
		t.Fatalf("the fence before the key is deleted: %+v", f)
	}
	must(t, e.pmem.Delete(ctx, dualwrite.StageKey))
	// Cut off from the proxy, an isolate reads no key, serves its binding.
	must(t, e.pmem.Put(ctx, "wordle:gap", []byte("acknowledged while the key was gone"), kv.PutOptions{}))

	// The flip reads the key back (unless the loop, kicked by the passes
	// above, did so first): either way it is written again and the fence
	// starts again from then.
	err := e.store.SetStage(ctx, dualwrite.Live)
	if !errors.Is(err, dualwrite.ErrUnsynced) || !strings.Contains(err.Error(), dualwrite.StageKey+" was written again 0s ago: the fence waits 10s more") {
		t.Fatalf("the flip with %s deleted: %v", dualwrite.StageKey, err)
	}
	if v := valueOf(t, e.pmem, dualwrite.StageKey); v != "handover" {
		t.Fatalf("%s = %q after the read-back, want handover", dualwrite.StageKey, v)
	}
	if k := e.store.Stats().StageKey; k.Rewrites != 1 {
		t.Fatalf("stage key %+v, want 1 rewrite", k)
	}
	if f := e.store.Fence(); f.Compared || !f.CompareFrom.Equal(e.clk.Now().Add(fence+2*window)) {
		t.Fatalf("the comparison does not run again from the rewrite: %+v", f)
	}
	flips := 0
	waitFor(t, "the flip, once the key reads back and the comparison ran again", func() bool {
		flips++
		if err := e.store.SetStage(ctx, dualwrite.Live); err == nil {
			return true
		} else if !errors.Is(err, dualwrite.ErrUnsynced) {
			t.Fatal(err)
		}
		e.clk.Advance(window)
		return false
	})
	if v := valueOf(t, e.smem, "wordle:gap"); v != "acknowledged while the key was gone" {
		t.Fatalf("MongoDB holds %q for the binding write made while the key was gone", v)
	}
	if k := e.store.Stats().StageKey; k.Found != dualwrite.KeyVerified || k.Rewrites != 1 {
		t.Fatalf("stage key after the flip %+v (%d flips asked), want read back and 1 rewrite", k, flips)
	}
}

// From handover to complete, the repair loop reads the stage key back
// every RepairInterval and writes it again when it is missing or says
// something else (a bot that wrote "off" through its binding): each
// rewrite is counted, an episode is logged once when it begins and once
// when it ends, however many intervals it lasts. In proxy mode (no fence)
// nothing is read.
func TestTheStageKeyIsRewrittenEveryRepairInterval(t *testing.T) {
	const repair = time.Minute
	var logs syncbuf.Buffer
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Live, FenceInterval: 10 * time.Second, RepairInterval: repair},
		func(su *setup) { su.log = &logs })
	ctx := e.ctx()
	// pass runs one pass of the repair loop: the clock moves by one
	// interval once the loop waits on it, and the pass is over once it
	// waits again.
	pass := func(what string, want dualwrite.StageKeyStatus) {
		t.Helper()
		waitFor(t, "the repair loop's timer", func() bool { return e.clk.Timers() == 1 })
		e.clk.Advance(repair)
		waitFor(t, "the repair loop's pass", func() bool { return e.clk.Timers() == 1 })
		if got := e.store.Stats().StageKey; got != want {
			t.Fatalf("%s: stage key %+v, want %+v", what, got, want)
		}
	}
	waitFor(t, "the key written by a Store that began in live", func() bool {
		return e.store.Stats().StageKey == dualwrite.StageKeyStatus{Found: dualwrite.KeyMissing, Rewrites: 1}
	})
	pass("the first start's key read back", dualwrite.StageKeyStatus{Found: dualwrite.KeyVerified, Rewrites: 1})
	for i, tamper := range []string{"off", "shadow", ""} { // three tampers, one interval apart
		if tamper == "" {
			must(t, e.pmem.Delete(ctx, dualwrite.StageKey))
		} else {
			must(t, e.pmem.Put(ctx, dualwrite.StageKey, []byte(tamper), kv.PutOptions{}))
		}
		found := dualwrite.KeyDifferent
		if tamper == "" {
			found = dualwrite.KeyMissing
		}
		pass("the key tampered with: "+tamper, dualwrite.StageKeyStatus{Found: found, Rewrites: uint64(i + 2)})
		if v := valueOf(t, e.pmem, dualwrite.StageKey); v != "handover" {
			t.Fatalf("%s = %q after the rewrite, want handover", dualwrite.StageKey, v)
		}
	}
	pass("the key read back", dualwrite.StageKeyStatus{Found: dualwrite.KeyVerified, Rewrites: 4})
	for _, stage := range []dualwrite.Stage{dualwrite.Rampdown, dualwrite.Complete} {
		must(t, e.store.SetStage(ctx, stage))
		must(t, e.pmem.Delete(ctx, dualwrite.StageKey))
		n := uint64(stage-dualwrite.Live) + 4
		pass("the key deleted in "+stage.String(), dualwrite.StageKeyStatus{Found: dualwrite.KeyMissing, Rewrites: n})
		pass("and read back", dualwrite.StageKeyStatus{Found: dualwrite.KeyVerified, Rewrites: n})
	}
	out := logs.String()
	if began, ended := strings.Count(out, "does not read back from the primary as written"), strings.Count(out, "reads back from the primary as written again"); began != 4 || ended != 4 {
		t.Fatalf("episodes logged %d times beginning and %d ending, want 4 each (the first start, the three tampers in one, rampdown, complete):\n%s", began, ended, out)
	}

	p := newEnv(t, dualwrite.Config{Stage: dualwrite.Live, RepairInterval: repair})
	p.clk.Advance(3 * repair)
	p.flush()
	if k := p.store.Stats().StageKey; k != (dualwrite.StageKeyStatus{}) {
		t.Fatalf("proxy mode: stage key %+v", k)
	}
}
