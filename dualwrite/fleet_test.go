package dualwrite_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// fleetOf is a Fleet that sees its peers' watermarks at once, as heartbeats
// would with no delay, and keeps the claims of all of them in one map.
type fleetOf struct {
	clk    *clock.Fake
	mu     *sync.Mutex
	claims map[[32]byte]time.Time
	peers  []*dualwrite.Store
	// fixed, when set, is the watermark: the peers' heartbeats as last
	// read, before they beat again.
	fixed time.Time
}

func (f *fleetOf) Watermark(context.Context) time.Time {
	f.mu.Lock()
	peers, fixed := f.peers, f.fixed
	f.mu.Unlock()
	if !fixed.IsZero() {
		return fixed
	}
	w := f.clk.Now()
	for _, p := range peers {
		if pw := p.Watermark(); pw.Before(w) {
			w = pw
		}
	}
	return w
}

func (f *fleetOf) Claim(_ context.Context, id [32]byte, hold time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clk.Now()
	if at, ok := f.claims[id]; ok && now.Sub(at) < hold {
		return false, nil
	}
	f.claims[id] = now
	return true, nil
}

// Two instances over the same stores. A's copy of its write of k is lost
// (k is dirty at A); B, which wrote k before, reads the stores differ, the
// same way, for two windows and more. The difference is A's known lost
// copy, not a divergence: B holds it until A's watermark passes its first
// sight, which happens only once A has repaired k, and then the stores are
// equal. Then a write around the layer, verified by both instances, is
// confirmed and reported once by the fleet, not once by each.
func TestFleetWatermarkAndOneReport(t *testing.T) {
	var mu sync.Mutex
	claims := map[[32]byte]time.Time{}
	clk := clock.NewFake(start)
	fa := &fleetOf{clk: clk, mu: &mu, claims: claims}
	fb := &fleetOf{clk: clk, mu: &mu, claims: claims}
	a := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: window, RepairInterval: never, Fleet: fa}, onClock(clk))
	bsink := &sinkRecorder{}
	b, err := dualwrite.New(dualwrite.Config{Primary: a.pmem, Shadow: a.smem, Stage: dualwrite.DualWrite, ConsistencyWindow: window,
		RepairInterval: never, FenceInterval: -1, Sink: bsink, Fleet: fb}, dualwrite.WithClock(clk), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	mu.Lock()
	fa.peers, fb.peers = []*dualwrite.Store{b}, []*dualwrite.Store{a.store}
	mu.Unlock()
	ctx := context.Background()
	settleB := func() {
		t.Helper()
		if _, err := b.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	const k = "wordle:k"
	must(t, b.Put(ctx, k, []byte("v1"), kv.PutOptions{}))
	must(t, b.Flush(ctx))
	a.shadow.SetOutage(true)
	must(t, a.store.Put(ctx, k, []byte("v2"), kv.PutOptions{}))
	a.flush()
	a.shadow.SetOutage(false)
	if st := a.store.Stats(); st.Dirty != 1 {
		t.Fatalf("A's copy was not lost: %d dirty", st.Dirty)
	}
	for range 4 {
		clk.Advance(window)
		settleB()
	}
	if st := b.Stats(); st.Confirmed != 0 || st.Held != 1 || len(bsink.records()) != 0 {
		t.Fatalf("B confirmed %d (held %d) a difference A's lost copy explains: %v", st.Confirmed, st.Held, bsink.records())
	}
	for range 3 { // A repairs k: the difference held a window, then the copy
		clk.Advance(window)
		a.store.RepairDirty()
		a.flush()
	}
	clk.Advance(window)
	settleB()
	if st := b.Stats(); st.Confirmed != 0 || st.Cleared != 1 || st.Unsettled+st.Dirty != 0 {
		t.Fatalf("after A's repair, B: confirmed %d, cleared %d, unsettled %d, dirty %d", st.Confirmed, st.Cleared, st.Unsettled, st.Dirty)
	}
	if a.store.Watermark().Before(clk.Now()) {
		t.Fatalf("A's watermark %v is behind now with nothing on its way", a.store.Watermark())
	}

	// A write around the layer of a key both instances wrote.
	const k2 = "wordle:k2"
	must(t, a.store.Put(ctx, k2, []byte("w1"), kv.PutOptions{}))
	a.flush()
	must(t, b.Put(ctx, k2, []byte("w2"), kv.PutOptions{}))
	must(t, b.Flush(ctx))
	must(t, a.smem.Put(ctx, k2, []byte("around"), kv.PutOptions{}))
	for i := range 2 {
		clk.Advance(window)
		if i == 1 { // both confirm before either reads the other's next heartbeat
			wa, wb := fa.Watermark(ctx), fb.Watermark(ctx)
			mu.Lock()
			fa.fixed, fb.fixed = wa, wb
			mu.Unlock()
		}
		settleB()
		if _, err := a.store.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The second to confirm counts it as reported elsewhere, unless the
	// first one's repair, which runs at once, has made the stores equal
	// before its pass: either way one report.
	sa, sb := a.store.Stats(), b.Stats()
	if reports := len(a.sink.records()) + len(bsink.records()); reports != 1 || sa.Confirmed+sb.Confirmed != 1 || sa.ReportedElsewhere+sb.ReportedElsewhere+sa.Cleared > 1 {
		t.Fatalf("a write around the layer: %d reports, confirmed %d+%d, reported elsewhere %d+%d; want one report",
			reports, sa.Confirmed, sb.Confirmed, sa.ReportedElsewhere, sb.ReportedElsewhere)
	}
}
