package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// With a second instance writing over the same stores, a late copy is never
// applied over a write of that instance it cannot order: b's newer write
// stands in MongoDB and a conflict names until when b may have written,
// whether a would have ordered the copy by its settle set's window or by
// Workers KV still holding the copy's value (b's copy of its own write
// never got there). Once b has been gone for longer than the clocks'
// trust, a copy acknowledged since is applied again, and a's own newer
// write supersedes a copy throughout.
func TestLateCopiesWithPeers(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window) // a has run for longer than a window
	// b copies to Workers KV through a store that is down: its copies
	// never land, as ones still on their way.
	down, err := kvfault.New(p.primary, kvfault.Config{Clock: p.clk})
	must(t, err)
	down.SetOutage(true)
	b, err := dualwrite.New(dualwrite.Config{Primary: down.Exact(), Shadow: p.shadow, Stage: dualwrite.Live,
		ConsistencyWindow: window, FenceInterval: -1, RepairInterval: never},
		dualwrite.WithClock(p.clk), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	get := func(key string) string {
		t.Helper()
		v, err := p.shadow.Get(ctx, key)
		if isNotFound(err) {
			return "<none>"
		}
		must(t, err)
		return string(v)
	}
	late := func(key string, acked time.Time) {
		t.Helper()
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte("binding"), At: acked}}))
		p.flush()
	}
	// b is alive: its heartbeat says so until LiveFor from now.
	p.store.SetPeersUntil(p.clk.Now().Add(time.Minute))

	// A stray isolate wrote its binding (Workers KV took it) at acked; b
	// wrote both keys 5 s later; the copies reach a after that.
	acked := p.clk.Now()
	for _, k := range []string{"wordle:window", "wordle:held"} {
		must(t, p.primary.Put(ctx, k, []byte("binding"), kv.PutOptions{}))
	}
	p.clk.Advance(5 * time.Second)
	for _, k := range []string{"wordle:window", "wordle:held"} {
		must(t, b.Put(ctx, k, []byte("through-b"), kv.PutOptions{}))
	}
	p.clk.Advance(time.Second)
	// Alone, a would take this one as newer than anything it wrote (its
	// set's window)...
	late("wordle:window", acked)
	// ...and this one, older than a window, by Workers KV holding it.
	p.clk.Advance(window)
	late("wordle:held", acked)
	for _, k := range []string{"wordle:window", "wordle:held"} {
		if v := get(k); v != "through-b" {
			t.Fatalf("%s: MongoDB holds %q: the late copy overwrote b's newer write", k, v)
		}
	}

	// a's own write after a copy supersedes it, peers or not.
	must(t, p.store.Put(ctx, "wordle:own", []byte("through-a"), kv.PutOptions{}))
	p.clk.Advance(5 * time.Second)
	late("wordle:own", p.clk.Now().Add(-10*time.Second))
	if v := get("wordle:own"); v != "through-a" {
		t.Fatalf("wordle:own: MongoDB holds %q", v)
	}

	// b stopped: its last heartbeat bounds its writes. A copy
	// acknowledged after that, beyond the clocks' trust, is the last
	// write, and both stores take it; an earlier time is ignored.
	stopped := p.clk.Now()
	p.store.SetPeersUntil(stopped)
	p.store.SetPeersUntil(stopped.Add(-time.Hour))
	p.clk.Advance(time.Minute)
	late("wordle:after", stopped.Add(dualwrite.DefaultIngestMaxLead+time.Second))
	if v, pr := get("wordle:after"), p.primary.Store.Get; v != "binding" {
		t.Fatalf("wordle:after: MongoDB holds %q", v)
	} else if w, err := pr(ctx, "wordle:after"); err != nil || string(w) != "binding" {
		t.Fatalf("wordle:after: Workers KV holds %q, %v", w, err)
	}
	// Within the trust of b's last heartbeat: still not known.
	late("wordle:close", stopped.Add(dualwrite.DefaultIngestMaxLead/2))
	if v := get("wordle:close"); v != "<none>" {
		t.Fatalf("wordle:close: MongoDB holds %q", v)
	}

	st := p.store.Stats()
	want := map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 1, dualwrite.LateSuperseded: 1, dualwrite.LateConflict: 3}
	for o, n := range want {
		if st.LateCopies[o] != n {
			t.Fatalf("late copies %v, want %v", st.LateCopies, want)
		}
	}
	recs := p.sink.conflictRecords()
	if len(recs) != 3 {
		t.Fatalf("%d conflict records, want 3: %+v", len(recs), recs)
	}
	wantUntil := []time.Time{acked.Add(time.Minute), acked.Add(time.Minute), stopped}
	for i, c := range recs {
		if c.Outcome != dualwrite.LateConflict || !c.PeersUntil.Equal(wantUntil[i]) || !c.Copy.Present {
			t.Fatalf("conflict record %d: %+v, peers until want %v", i, c, wantUntil[i])
		}
	}
}

// A late copy delivered twice is applied once: the second finds MongoDB
// holding exactly what it says and reports no conflict, nor does one whose
// value another instance wrote after it. A copy MongoDB does not hold is
// still a conflict.
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
	if recs := p.sink.conflictRecords(); len(recs) != 1 || st.Conflicts != 1 {
		t.Fatalf("conflicts %d, records %+v; want the one of wordle:other", st.Conflicts, recs)
	}
}
