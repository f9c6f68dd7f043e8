package dualwrite_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Stages change, including flips of authority, while writers and readers
// run: no acknowledged write is lost, both stores end identical, and reads
// come from the shadow in live and rampdown.
func TestStageTransitionsUnderLoad(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, CompareRate: 1, ConsistencyWindow: -1, Lanes: 4, LaneDepth: 1 << 14,
		ShadowTimeout: time.Hour,
	}, realLatency)
	e.primary.SetLatency(0, 30*time.Microsecond)
	e.shadow.SetLatency(0, 100*time.Microsecond)
	// The marker lives only in the shadow: reading it tells which store
	// served the read.
	must(t, e.smem.Put(context.Background(), "marker:m", []byte("shadow"), kv.PutOptions{}))

	const writers, keys = 4, 6
	var (
		wg     sync.WaitGroup
		stop   atomic.Bool
		writes atomic.Int64
		last   [writers][keys]string // the last acknowledged value, "" for deleted
	)
	for w := range writers {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; !stop.Load(); i++ {
				k := i % keys
				name := fmt.Sprintf("w%d:k%d", w, k)
				var err error
				if i%7 == 6 {
					if err = e.store.Delete(ctx, name); err == nil {
						last[w][k] = ""
					}
				} else {
					v := fmt.Sprintf("v%d", i)
					if err = e.store.Put(ctx, name, []byte(v), kv.PutOptions{}); err == nil {
						last[w][k] = v
					}
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				writes.Add(1)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }() // on failure too
	var wrongStore atomic.Int64
	wg.Go(func() {
		ctx := context.Background()
		for !stop.Load() {
			before := e.store.Stage()
			_, err := e.store.Get(ctx, "marker:m")
			after := e.store.Stage()
			if before != after {
				continue
			}
			fromShadow := err == nil
			if fromShadow != (before == dualwrite.Live || before == dualwrite.Rampdown) {
				wrongStore.Add(1)
			}
			_, _ = e.store.Get(ctx, fmt.Sprintf("w0:k%d", writes.Load()%keys))
		}
	})
	for _, st := range []dualwrite.Stage{
		dualwrite.Shadow, dualwrite.Handover, dualwrite.Live, dualwrite.Rampdown,
		dualwrite.Live, dualwrite.Handover, dualwrite.Live, dualwrite.Handover,
	} {
		target := writes.Load() + 150
		waitFor(t, "writes to progress", func() bool { return writes.Load() >= target })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := e.store.SetStage(ctx, st)
		cancel()
		if err != nil {
			t.Fatalf("SetStage(%s): %v", st, err)
		}
	}
	target := writes.Load() + 150
	waitFor(t, "writes to progress", func() bool { return writes.Load() >= target })
	stop.Store(true)
	wg.Wait()
	e.flush()

	for r, n := range e.store.Stats().Drops {
		if n != 0 {
			t.Fatalf("%d writes dropped (%s): lanes too shallow for the test", n, r)
		}
	}
	if n := wrongStore.Load(); n != 0 {
		t.Fatalf("%d reads came from the wrong store", n)
	}
	must(t, e.smem.Delete(context.Background(), "marker:m"))
	sameContents(t, e.pmem, e.smem)
	for w := range writers {
		for k := range keys {
			v, err := e.pmem.Get(context.Background(), fmt.Sprintf("w%d:k%d", w, k))
			if got := string(v); (err == nil) != (last[w][k] != "") || got != last[w][k] {
				t.Fatalf("w%d:k%d = %q, %v; the last acknowledged write was %q", w, k, got, err, last[w][k])
			}
		}
	}
	// The only divergences are the marker's, which the test put in the
	// shadow alone.
	for _, rec := range e.sink.records() {
		if rec.Namespace != "marker" || rec.Kind != compare.ExtraInShadow && rec.Kind != compare.MissingInShadow {
			t.Fatalf("unexpected divergence %+v", rec)
		}
	}
	if got := len(e.obs.stages); got != 8 {
		t.Fatalf("observer saw %d stage changes, want 8", got)
	}
}

func TestStageTransitionRules(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Off, ConsistencyWindow: -1, ShadowTimeout: never, // see drive
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
	})
	ctx := e.ctx()
	wantErr(t, "off to live", e.store.SetStage(ctx, dualwrite.Live), dualwrite.ErrStageTransition)
	wantErr(t, "unknown stage", e.store.SetStage(ctx, dualwrite.Stage(77)), dualwrite.ErrInvalidConfig)
	must(t, stepTo(ctx, e.store, dualwrite.Live))

	// A dirty key blocks a flip: the primary missed a write.
	e.primary.SetOutage(true)
	e.put("wordle:k", "v", kv.PutOptions{})
	e.flush()
	wantErr(t, "flip with a dirty key", e.store.SetStage(ctx, dualwrite.Handover), dualwrite.ErrUnsynced)
	if e.store.Stage() != dualwrite.Live {
		t.Fatalf("stage %s after a refused flip", e.store.Stage())
	}
	e.primary.SetOutage(false)
	e.repair()

	// A flip whose drain outlasts its context leaves the stage alone.
	e.primary.SetLatency(time.Hour, 0)
	e.put("wordle:k", "v2", kv.PutOptions{})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.store.SetStage(cancelled, dualwrite.Handover); !errors.Is(err, context.Canceled) || e.store.Stage() != dualwrite.Live {
		t.Fatalf("flip with a cancelled context = %v, stage %s", err, e.store.Stage())
	}
	e.primary.SetLatency(0, 0)
	e.drive(time.Hour)
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	sameContents(t, e.pmem, e.smem)

	// Complete is one-way.
	must(t, stepTo(ctx, e.store, dualwrite.Complete))
	wantErr(t, "complete to rampdown", e.store.SetStage(ctx, dualwrite.Rampdown), dualwrite.ErrStageTransition)
}

// The stage machine: one step along Stages, forward or back, never out of
// complete; every refusal names the next allowed steps; SetStage refuses
// exactly what CheckTransition refuses.
func TestCheckTransitionIsTheStageMachine(t *testing.T) {
	next := map[dualwrite.Stage]string{
		dualwrite.Off:       "the next allowed stage is dualwrite",
		dualwrite.DualWrite: "the next allowed stages are off and shadow",
		dualwrite.Shadow:    "the next allowed stages are dualwrite and handover",
		dualwrite.Handover:  "the next allowed stages are shadow and live",
		dualwrite.Live:      "the next allowed stages are handover and rampdown",
		dualwrite.Rampdown:  "the next allowed stages are live and complete",
		dualwrite.Complete:  "no stage follows it",
	}
	for _, from := range dualwrite.Stages {
		for _, to := range dualwrite.Stages {
			allowed := from == to || from != dualwrite.Complete && (to == from+1 || to+1 == from)
			err := dualwrite.CheckTransition(from, to)
			if (err == nil) != allowed || err != nil && (!errors.Is(err, dualwrite.ErrStageTransition) || !strings.Contains(err.Error(), next[from])) {
				t.Errorf("%s -> %s: %v; allowed: %v", from, to, err, allowed)
			}
			e := newEnv(t, dualwrite.Config{Stage: from})
			if got := e.store.SetStage(e.ctx(), to); (got == nil) != (err == nil) || errors.Is(got, dualwrite.ErrStageTransition) != errors.Is(err, dualwrite.ErrStageTransition) {
				t.Errorf("%s -> %s: SetStage = %v, CheckTransition = %v", from, to, got, err)
			}
			if flip := dualwrite.IsFlip(from, to); flip != ((from >= dualwrite.Live) != (to >= dualwrite.Live)) {
				t.Errorf("IsFlip(%s, %s) = %v", from, to, flip)
			}
		}
	}
	if err := dualwrite.CheckTransition(dualwrite.Off, dualwrite.Stage(99)); !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Errorf("CheckTransition to an unknown stage = %v", err)
	}
}
