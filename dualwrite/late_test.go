package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy that arrives when MongoDB is authoritative is never dropped: the
// last acknowledged write wins when the Store can order it against its own
// writes, the authoritative value stands when it cannot, and the key stays
// in the settle set either way.
func TestLateCopies(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window) // the Store has run for longer than a window
	late := func(key, value string, acked time.Time) {
		t.Helper()
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte(value), At: acked}}))
		p.flush()
	}

	// The proxy wrote a at T; the binding wrote it 3 s later: the copy
	// is the last acknowledged write, and both stores take it.
	must(t, p.store.Put(ctx, "wordle:a", []byte("proxy"), kv.PutOptions{}))
	tA := p.clk.Now()
	p.clk.Advance(5 * time.Second)
	late("wordle:a", "binding", tA.Add(3*time.Second))
	if s, pr := valueOf(t, p.shadow, "wordle:a"), valueOf(t, p.primary, "wordle:a"); s != "binding" || pr != "binding" {
		t.Fatalf("applied late copy: shadow %q, primary %q", s, pr)
	}

	// The binding wrote b at T, the proxy 5 s later: the proxy's write
	// stands.
	tB := p.clk.Now()
	p.clk.Advance(5 * time.Second)
	must(t, p.store.Put(ctx, "wordle:b", []byte("proxy"), kv.PutOptions{}))
	p.clk.Advance(time.Second)
	late("wordle:b", "binding", tB)
	if s := valueOf(t, p.shadow, "wordle:b"); s != "proxy" {
		t.Fatalf("superseded late copy: shadow %q", s)
	}

	// Within the trust given to clocks of each other: not ordered.
	must(t, p.store.Put(ctx, "wordle:c", []byte("proxy"), kv.PutOptions{}))
	late("wordle:c", "binding", p.clk.Now().Add(-time.Second))
	// A key the Store has not seen for a window, written by the binding
	// just now: after anything written through this Store.
	must(t, p.shadow.Store.Put(ctx, "wordle:d", []byte("old"), kv.PutOptions{}))
	late("wordle:d", "binding", p.clk.Now().Add(-time.Second))
	// The same, acknowledged two minutes ago: a write through the Store
	// since is possible, and the order not known.
	must(t, p.shadow.Store.Put(ctx, "wordle:e", []byte("old"), kv.PutOptions{}))
	late("wordle:e", "binding", p.clk.Now().Add(-2*time.Minute))
	if s := valueOf(t, p.shadow, "wordle:d"); s != "binding" {
		t.Fatalf("late copy of an idle key: shadow %q", s)
	}
	for _, k := range []string{"wordle:c", "wordle:e"} {
		if s := valueOf(t, p.shadow, k); s == "binding" {
			t.Fatalf("%s: a conflicting late copy overwrote the authoritative value", k)
		}
	}

	st := p.store.Stats()
	want := map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 2, dualwrite.LateSuperseded: 1, dualwrite.LateConflict: 2, dualwrite.LateFailed: 0}
	for o, n := range want {
		if st.LateCopies[o] != n {
			t.Fatalf("late copies %v, want %v", st.LateCopies, want)
		}
	}
	if st.Unsettled != 5 || st.Fence.IngestUnverified != 5 {
		t.Fatalf("unsettled %d, fence %+v", st.Unsettled, st.Fence)
	}
	// The way back waits for every key a copy wrote last.
	if f := p.store.Fence(); f.Clear() {
		t.Fatalf("fence clear with unverified late copies: %+v", f)
	}
	// A difference is confirmed a window after it is first seen, then
	// repaired and verified: a few passes.
	for range 6 {
		p.store.RepairDirty()
		p.settle()
	}
	if f := p.store.Fence(); !f.Clear() {
		t.Fatalf("fence after verification: %+v", f)
	}
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c", "wordle:d", "wordle:e"} {
		if s, pr := valueOf(t, p.shadow, k), valueOf(t, p.primary, k); s != pr {
			t.Fatalf("%s after settling: shadow %q, primary %q", k, s, pr)
		}
	}
}

// A copy's acknowledged-at time is trusted only within bounds of its
// arrival: a replay an hour old and a copy stamped minutes ahead are
// refused and counted, change nothing, and do not make the real copy be
// dropped as stale.
func TestIngestBoundsAckedAt(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:r", []byte("new"), kv.PutOptions{}))
	p.settle()
	now := p.clk.Now()
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{
		{Key: "wordle:r", Value: []byte("replayed"), At: now.Add(-time.Hour)},
		{Key: "wordle:f", Value: []byte("forged"), At: now.Add(4 * time.Minute)},
	}))
	p.flush()
	if v, _ := p.shadow.Store.Get(ctx, "wordle:r"); string(v) != "new" {
		t.Fatalf("a replayed copy overwrote a newer write: %q", v)
	}
	if _, err := p.shadow.Store.Get(ctx, "wordle:f"); !isNotFound(err) {
		t.Fatalf("a copy stamped in the future was applied: %v", err)
	}
	// The real write of f, acknowledged now, arrives a second later.
	must(t, p.primary.Store.Put(ctx, "wordle:f", []byte("real"), kv.PutOptions{}))
	p.clk.Advance(time.Second)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:f", Value: []byte("real"), At: now}}))
	p.flush()
	if v, _ := p.shadow.Store.Get(ctx, "wordle:f"); string(v) != "real" {
		t.Fatalf("the real copy after a future one: shadow %q", v)
	}
	st := p.store.Stats()
	if st.IngestRefused[dualwrite.RefusedAckedPast] != 1 || st.IngestRefused[dualwrite.RefusedAckedFuture] != 1 || st.IngestStale != 0 {
		t.Fatalf("refused %v, stale %d", st.IngestRefused, st.IngestStale)
	}
	// The refused copies' keys are verified like any other.
	if st.Unsettled != 2 {
		t.Fatalf("unsettled %d", st.Unsettled)
	}
	p.settle()
	if st := p.store.Stats(); st.Unsettled != 0 || st.Verifications[compare.Match] < 2 {
		t.Fatalf("after settling: unsettled %d, %v", st.Unsettled, nonzero(st.Verifications))
	}
}

// A late copy that MongoDB refuses to take is not dropped either: counted
// as failed and its key left for repair.
func TestLateCopyThatMongoDBRefuses(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Live, RepairInterval: time.Hour})
	e.clk.Advance(2 * dualwrite.DefaultConsistencyWindow)
	e.shadow.SetOutage(true)
	must(t, e.store.Ingest(e.ctx(), []dualwrite.TeeWrite{{Key: "wordle:x", Value: []byte("binding"), At: e.clk.Now()}}))
	st := e.store.Stats()
	if st.LateCopies[dualwrite.LateFailed] != 1 || st.Dirty+st.Unsettled != 1 || st.Fence.IngestUnverified != 1 {
		t.Fatalf("late copies %v, dirty %d, unsettled %d, fence %+v", st.LateCopies, st.Dirty, st.Unsettled, st.Fence)
	}
}

// In complete Workers KV is neither written nor settled: a late copy that
// came last goes to MongoDB alone, and no key enters the settle set, where
// nothing would ever settle it.
func TestLateCopyInComplete(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Complete})
	ctx := context.Background()
	p.clk.Advance(2 * window)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:c", Value: []byte("binding"), At: p.clk.Now()}}))
	p.flush()
	if v, err := p.shadow.Store.Get(ctx, "wordle:c"); err != nil || string(v) != "binding" {
		t.Fatalf("shadow: %q, %v", v, err)
	}
	if _, err := p.primary.Store.Get(ctx, "wordle:c"); !isNotFound(err) {
		t.Fatalf("Workers KV was written in complete: %v", err)
	}
	if st := p.store.Stats(); st.LateCopies[dualwrite.LateApplied] != 1 || st.Unsettled+st.Dirty != 0 {
		t.Fatalf("late copies %v, unsettled %d, dirty %d", st.LateCopies, st.Unsettled, st.Dirty)
	}
}
