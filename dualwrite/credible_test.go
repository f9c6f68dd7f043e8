package dualwrite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy's credibility rests on its arrival, by the Store's clock: a late
// copy that arrives more than a fence interval after MongoDB became
// authoritative is refused whatever acknowledged-at time it claims (a
// back-dated forgery included), counted, logged once for its batch and
// its key verified; it is never applied and opens no conflict. A flood of
// them leaves a real late copy's conflict counted and its key held for
// verification, and holds the way back no longer than one verification
// pass; nothing keeps complete from being reached.
func TestABackDatedCopyAfterTheFlipIsRefused(t *testing.T) {
	const fence = time.Minute
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live, FenceInterval: fence, AuthoritativeSince: start})
	ctx := context.Background()
	for _, s := range []*counted{p.primary, p.shadow} {
		must(t, s.Store.Put(ctx, "wordle:real", []byte("before the flip"), kv.PutOptions{}))
	}
	// Within the fence: a real late copy whose order is not known.
	p.clk.Advance(fence / 2)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:real", Value: []byte("binding"), At: start.Add(time.Second)}}))

	// Past it: 1,000 copies, back-dated into the window, in one batch.
	p.clk.Advance(fence)
	must(t, p.store.Put(ctx, "wordle:proxy", []byte("through-the-proxy"), kv.PutOptions{}))
	forged := make([]dualwrite.TeeWrite, 1000)
	for i := range forged {
		forged[i] = dualwrite.TeeWrite{Key: fmt.Sprintf("wordle:f%d", i%999), Value: []byte("forged"), At: start.Add(fence / 4)}
	}
	forged[999].Key = "wordle:proxy"
	must(t, p.store.Ingest(ctx, forged))
	p.flush()

	st := p.store.Stats()
	if st.IngestRefused[dualwrite.RefusedAckedAfterFlip] != 1000 || st.LateCopies[dualwrite.LateConflict] != 1 || st.LateCopies[dualwrite.LateApplied] != 0 {
		t.Fatalf("refused %v, late %v; want 1000 refused as after the flip and the real conflict", st.IngestRefused, st.LateCopies)
	}
	if v := valueOf(t, p.shadow, "wordle:proxy"); v != "through-the-proxy" {
		t.Fatalf("MongoDB holds %q", v)
	}
	if v := valueOf(t, p.shadow, "wordle:f1"); v != "<none>" {
		t.Fatalf("a forged copy reached MongoDB: %q", v)
	}
	if lines := p.logs.lines("tee copies refused or not applied"); len(lines) != 2 {
		t.Fatalf("%d log lines for two batches, want one each:\n%v", len(lines), lines)
	}
	// The real conflict's key and the forged keys wait for one pass.
	if f := p.store.Fence(); f.Clear() || f.IngestUnverified < 1000 {
		t.Fatalf("fence before verification: %+v", f)
	}
	p.settle()
	if f := p.store.Fence(); !f.Clear() {
		t.Fatalf("the way back is held after one verification pass: %+v", f)
	}
	must(t, p.store.SetStage(ctx, dualwrite.Rampdown))
	must(t, p.store.SetStage(ctx, dualwrite.Complete))
}

// A Store that flips to live itself knows when: a copy that arrives a
// fence interval after its flip is refused, whatever it claims.
func TestTheFlipSetsWhenCopiesStopBeingCredible(t *testing.T) {
	const fence = time.Second
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: fence})
	ctx := context.Background()
	p.clk.Advance(time.Hour)
	waitFor(t, "the flip, once the full comparison ran", func() bool { return p.store.SetStage(ctx, dualwrite.Live) == nil })
	flipped := p.clk.Now()
	p.clk.Advance(time.Minute)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:k", Value: []byte("late"), At: flipped}}))
	if n := p.store.Stats().IngestRefused[dualwrite.RefusedAckedAfterFlip]; n != 1 {
		t.Fatalf("refused %d after the flip, want 1", n)
	}
}

// In handover, a copy that arrives after the stage's fence interval (no
// isolate writes its binding then) never reaches MongoDB and does not hold
// the flip at all, whatever time it claims: the full comparison covers
// whatever it says.
func TestAForgedCopyInHandoverDoesNotHoldTheFlip(t *testing.T) {
	const fence = time.Second
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: fence})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:k", []byte("through-the-proxy"), kv.PutOptions{}))
	p.flush()
	p.clk.Advance(time.Hour)
	waitFor(t, "the full comparison", func() bool { p.store.RepairDirty(); return p.store.Fence().Compared })
	p.settle()
	// Stamped now, and replayed from an hour ago: both after the interval.
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{
		{Key: "wordle:k", Value: []byte("forged"), At: p.clk.Now()},
		{Key: "wordle:k", Value: []byte("forged"), At: p.clk.Now().Add(-time.Hour)},
	}))
	p.flush()
	if v := valueOf(t, p.shadow, "wordle:k"); v != "through-the-proxy" {
		t.Fatalf("MongoDB holds %q", v)
	}
	if st := p.store.Stats(); st.IngestRefused[dualwrite.RefusedAfterFence] != 2 {
		t.Fatalf("refused %v", st.IngestRefused)
	}
	if lines := p.logs.lines("tee copies refused or not applied"); len(lines) != 1 {
		t.Fatalf("%d log lines for one batch: %v", len(lines), lines)
	}
	must(t, p.store.SetStage(ctx, dualwrite.Live))
}
