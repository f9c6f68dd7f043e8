package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A late copy acknowledged more than a fence interval after MongoDB became
// authoritative is not credible: no isolate can write its binding then, so
// it is refused and counted, its key left for verification, and it opens
// no conflict and is never applied, whatever value it carries. One
// acknowledged before is ordered as a late copy.
func TestLateCopiesAfterTheFlipAreNotCredible(t *testing.T) {
	const fence = time.Minute
	clkStart := start
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live, FenceInterval: fence, AuthoritativeSince: clkStart})
	ctx := context.Background()
	p.clk.Advance(fence + 2*window)
	must(t, p.store.Put(ctx, "wordle:k", []byte("through-the-proxy"), kv.PutOptions{}))
	p.clk.Advance(10 * time.Second)
	// "Now", with another value: a forgery or a bot version that ignores
	// the stage.
	for i := range 20 {
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:k", Value: []byte("forged"), At: p.clk.Now().Add(-time.Duration(i) * time.Second)}}))
	}
	p.flush()
	st := p.store.Stats()
	if st.IngestRefused[dualwrite.RefusedAckedAfterFlip] != 20 || len(st.LateCopies) > 0 && st.LateCopies[dualwrite.LateConflict]+st.LateCopies[dualwrite.LateApplied] != 0 {
		t.Fatalf("refused %v, late %v; want 20 refused as acked after the flip", st.IngestRefused, st.LateCopies)
	}
	if _, total := p.store.Conflicts(); total != 0 {
		t.Fatalf("%d conflicts from copies no isolate could have written", total)
	}
	if v := valueOf(t, p.shadow, "wordle:k"); v != "through-the-proxy" {
		t.Fatalf("MongoDB holds %q", v)
	}

	// Acknowledged within the fence after the flip: a late copy, ordered.
	must(t, p.shadow.Store.Put(ctx, "wordle:early", []byte("old"), kv.PutOptions{}))
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:early", Value: []byte("binding"), At: clkStart.Add(fence / 2)}}))
	p.flush()
	if st := p.store.Stats(); st.IngestRefused[dualwrite.RefusedAckedAfterFlip] != 20 || st.LateCopies[dualwrite.LateConflict] != 1 {
		t.Fatalf("a copy acked within the fence: refused %v, late %v", st.IngestRefused, st.LateCopies)
	}
}

// A Store that flips to live itself knows when: a copy acknowledged a
// fence interval after its flip is refused; back in handover, none is.
func TestTheFlipSetsWhenCopiesStopBeingCredible(t *testing.T) {
	const fence = time.Second
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: fence})
	ctx := context.Background()
	p.clk.Advance(time.Hour)
	waitFor(t, "the flip, once the full comparison ran", func() bool { return p.store.SetStage(ctx, dualwrite.Live) == nil })
	flipped := p.clk.Now()
	p.clk.Advance(time.Minute)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:k", Value: []byte("late"), At: flipped.Add(30 * time.Second)}}))
	if n := p.store.Stats().IngestRefused[dualwrite.RefusedAckedAfterFlip]; n != 1 {
		t.Fatalf("refused %d after the flip, want 1", n)
	}
}
