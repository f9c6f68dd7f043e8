package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// With a second instance writing over the same stores, a late copy is not
// ordered by a's own settle set: b's newer write that reached Workers KV
// stands in MongoDB and the copy is a conflict, though a, alone, would have
// taken the copy as newer than anything it wrote (its settle set's window);
// one whose copy to Workers KV is still on its way leaves Workers KV
// holding the copy's value, so the copy is applied, as the last write
// Workers KV acknowledged. Once b has
// been gone for longer than the clocks' trust, a copy acknowledged since is
// applied unreported again, and a's own newer write supersedes a copy
// throughout.
func TestLateCopiesWithPeers(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window) // a has run for longer than a window
	// b copies to Workers KV through a store that goes down at will: its
	// copies then stay on their way.
	down, err := kvfault.New(p.primary, kvfault.Config{Clock: p.clk})
	must(t, err)
	b, err := dualwrite.New(dualwrite.Config{Primary: down.Exact(), Shadow: p.shadow, Stage: dualwrite.Live,
		ConsistencyWindow: window, FenceInterval: -1, RepairInterval: never},
		dualwrite.WithClock(p.clk), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	late := func(key string, acked time.Time) {
		t.Helper()
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte("binding"), At: acked}}))
		p.flush()
	}
	// b is alive: its heartbeat says so until LiveFor from now.
	p.store.SetPeersUntil(p.clk.Now().Add(time.Minute))

	// A stray isolate wrote its binding (Workers KV took it) at acked; b
	// wrote both keys 5 s later, one copy reaching Workers KV, one not.
	acked := p.clk.Now()
	for _, k := range []string{"wordle:landed", "wordle:inflight"} {
		must(t, p.primary.Put(ctx, k, []byte("binding"), kv.PutOptions{}))
	}
	p.clk.Advance(5 * time.Second)
	must(t, b.Put(ctx, "wordle:landed", []byte("through-b"), kv.PutOptions{}))
	flush, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, b.Flush(flush))
	down.SetOutage(true)
	must(t, b.Put(ctx, "wordle:inflight", []byte("through-b"), kv.PutOptions{}))
	p.clk.Advance(time.Second)
	late("wordle:landed", acked)
	late("wordle:inflight", acked)
	if s, pr := valueOf(t, p.shadow, "wordle:landed"), valueOf(t, p.primary, "wordle:landed"); s != "through-b" || pr != "through-b" {
		t.Fatalf("wordle:landed: MongoDB holds %q, Workers KV %q: the late copy overwrote b's newer write", s, pr)
	}
	if s, pr := valueOf(t, p.shadow, "wordle:inflight"), valueOf(t, p.primary, "wordle:inflight"); s != "binding" || pr != "binding" {
		t.Fatalf("wordle:inflight: MongoDB holds %q, Workers KV %q; want the copy, as Workers KV acknowledged it last", s, pr)
	}

	// a's own write after a copy supersedes it, peers or not.
	must(t, p.store.Put(ctx, "wordle:own", []byte("through-a"), kv.PutOptions{}))
	p.clk.Advance(5 * time.Second)
	late("wordle:own", p.clk.Now().Add(-10*time.Second))
	if v := valueOf(t, p.shadow, "wordle:own"); v != "through-a" {
		t.Fatalf("wordle:own: MongoDB holds %q", v)
	}

	// b stopped, past what its last live heartbeat promised: its last
	// heartbeat bounds its writes. A copy acknowledged after that, beyond
	// the clocks' trust, is the last write, and both stores take it; an
	// earlier time is ignored.
	p.clk.Advance(time.Minute)
	stopped := p.clk.Now()
	p.store.SetPeersUntil(stopped)
	p.store.SetPeersUntil(stopped.Add(-time.Hour))
	p.clk.Advance(time.Minute)
	late("wordle:after", stopped.Add(dualwrite.DefaultIngestMaxLead+time.Second))
	if s, pr := valueOf(t, p.shadow, "wordle:after"), valueOf(t, p.primary, "wordle:after"); s != "binding" || pr != "binding" {
		t.Fatalf("wordle:after: MongoDB holds %q, Workers KV %q", s, pr)
	}
	// Within the trust of b's last heartbeat, with nothing in Workers KV
	// to order it: not known.
	late("wordle:close", stopped.Add(dualwrite.DefaultIngestMaxLead/2))
	if v := valueOf(t, p.shadow, "wordle:close"); v != "<none>" {
		t.Fatalf("wordle:close: MongoDB holds %q", v)
	}

	st := p.store.Stats()
	want := map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 2, dualwrite.LateSuperseded: 1, dualwrite.LateConflict: 2}
	for _, o := range dualwrite.LateOutcomes {
		if st.LateCopies[o] != want[o] {
			t.Fatalf("late copies %v, want %v", st.LateCopies, want)
		}
	}
}

// A late copy delivered twice is applied once: the second finds MongoDB
// holding exactly what it says and is counted held, as is one whose value
// another instance wrote too. A copy MongoDB does not hold is a conflict.
func TestLateCopiesAlreadyHeldReportNoConflict(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window)
	ingest := func(key, value string, acked time.Time) {
		t.Helper()
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte(value), At: acked}}))
		p.flush()
	}
	acked := p.clk.Now().Add(-time.Second)
	ingest("wordle:twice", "binding", acked)
	p.clk.Advance(time.Second)
	ingest("wordle:twice", "binding", acked) // the tee retried the batch

	// Another instance may have written since: the same value is held,
	// another one a conflict.
	p.store.SetPeersUntil(p.clk.Now().Add(time.Minute))
	must(t, p.shadow.Put(ctx, "wordle:same", []byte("binding"), kv.PutOptions{}))
	must(t, p.shadow.Put(ctx, "wordle:other", []byte("through-b"), kv.PutOptions{}))
	ingest("wordle:same", "binding", p.clk.Now().Add(-5*time.Second))
	ingest("wordle:other", "binding", p.clk.Now().Add(-5*time.Second))

	st := p.store.Stats()
	want := map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 1, dualwrite.LateHeld: 2, dualwrite.LateConflict: 1}
	for _, o := range dualwrite.LateOutcomes {
		if st.LateCopies[o] != want[o] {
			t.Fatalf("late copies %v, want %v", st.LateCopies, want)
		}
	}
}
