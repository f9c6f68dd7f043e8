package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy that arrives when MongoDB is authoritative is never dropped: it is
// applied when Workers KV shows it was the last acknowledged write (its key
// outside the settle set, Workers KV holding it), MongoDB's value stands
// otherwise (superseded by the Store's newer write, held when it is the
// copy's, else a conflict), and the key stays in the settle set either way.
func TestLateCopies(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live})
	ctx := context.Background()
	p.clk.Advance(2 * window)
	late := func(key, value string, acked time.Time) {
		t.Helper()
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte(value), At: acked}}))
		p.flush()
	}
	put := func(s kv.Store, key, value string) {
		t.Helper()
		must(t, s.Put(ctx, key, []byte(value), kv.PutOptions{}))
	}

	// The proxy wrote a, not verified yet; a copy acknowledged after it:
	// Workers KV does not show it, and MongoDB's value stands.
	put(p.store, "wordle:a", "proxy")
	tA := p.clk.Now()
	p.clk.Advance(5 * time.Second)
	late("wordle:a", "binding", tA.Add(3*time.Second))
	// The binding wrote b at T, the proxy 5 s later: superseded.
	tB := p.clk.Now()
	p.clk.Advance(5 * time.Second)
	put(p.store, "wordle:b", "proxy")
	p.clk.Advance(time.Second)
	late("wordle:b", "binding", tB)
	// d: Workers KV holds the copy, MongoDB an older value: applied. e:
	// Workers KV holds another: a conflict. f: MongoDB holds it already.
	put(p.primary.Store, "wordle:d", "binding")
	put(p.shadow.Store, "wordle:d", "old")
	put(p.primary.Store, "wordle:e", "newer in Workers KV")
	put(p.shadow.Store, "wordle:e", "old")
	put(p.shadow.Store, "wordle:f", "binding")
	for _, k := range []string{"wordle:d", "wordle:e", "wordle:f"} {
		late(k, "binding", p.clk.Now().Add(-2*time.Minute))
	}
	want := map[string]string{"wordle:a": "proxy", "wordle:b": "proxy", "wordle:d": "binding", "wordle:e": "old", "wordle:f": "binding"}
	for k, v := range want {
		if s := valueOf(t, p.shadow, k); s != v {
			t.Fatalf("%s: MongoDB holds %q, want %q", k, s, v)
		}
	}
	if pr := valueOf(t, p.primary, "wordle:d"); pr != "binding" {
		t.Fatalf("wordle:d: Workers KV holds %q", pr)
	}

	st := p.store.Stats()
	wantN := map[dualwrite.LateOutcome]uint64{dualwrite.LateApplied: 1, dualwrite.LateSuperseded: 1, dualwrite.LateConflict: 2, dualwrite.LateHeld: 1}
	for _, o := range dualwrite.LateOutcomes {
		if st.LateCopies[o] != wantN[o] {
			t.Fatalf("late copies %v, want %v", st.LateCopies, wantN)
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
	for k := range want {
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
	must(t, e.pmem.Put(e.ctx(), "wordle:x", []byte("binding"), kv.PutOptions{})) // the binding wrote it
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
	must(t, p.primary.Store.Put(ctx, "wordle:c", []byte("binding"), kv.PutOptions{})) // the binding wrote it
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:c", Value: []byte("binding"), At: p.clk.Now()}}))
	p.flush()
	if v, err := p.shadow.Store.Get(ctx, "wordle:c"); err != nil || string(v) != "binding" {
		t.Fatalf("shadow: %q, %v", v, err)
	}
	if n := p.primary.puts.Load() + p.primary.bulkPuts.Load(); n != 0 {
		t.Fatalf("Workers KV was written in complete: %d puts", n)
	}
	if st := p.store.Stats(); st.LateCopies[dualwrite.LateApplied] != 1 || st.Unsettled+st.Dirty != 0 {
		t.Fatalf("late copies %v, unsettled %d, dirty %d", st.LateCopies, st.Unsettled, st.Dirty)
	}
}
