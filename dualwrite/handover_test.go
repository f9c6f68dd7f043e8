package dualwrite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
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
			if strings.Contains(why, dualwrite.StageKey) {
				return true
			}
		}
		return false
	}
	if !holds() {
		t.Fatalf("the fence does not name %s: %+v", dualwrite.StageKey, e.store.Fence())
	}
	e.clk.Advance(3 * window) // the quiet interval and the comparison's windows
	if err := e.store.SetStage(ctx, dualwrite.Live); !errors.Is(err, dualwrite.ErrUnsynced) || !strings.Contains(err.Error(), dualwrite.StageKey) {
		t.Fatalf("the flip with %s unwritten: %v", dualwrite.StageKey, err)
	}
	e.primary.SetOutage(false)
	waitFor(t, dualwrite.StageKey+" written once the primary answers", func() bool {
		if _, err := e.pmem.Get(ctx, dualwrite.StageKey); err == nil {
			return true
		}
		e.clk.Advance(repair)
		return false
	})
	if holds() {
		t.Fatalf("the fence still names %s once it is written: %+v", dualwrite.StageKey, e.store.Fence())
	}
}
