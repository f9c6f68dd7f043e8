package dualwrite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Each injected difference is reported with its kind, redacted.
func TestComparisonKinds(t *testing.T) {
	const window = time.Minute
	type tc struct {
		name  string
		stage dualwrite.Stage
		// setup prepares key k; the clock then moves past the
		// consistency window unless fresh is set.
		setup func(e *env, k string)
		fresh bool
		want  compare.Kind
	}
	ctx := context.Background()
	cases := []tc{
		{name: "match", want: compare.Match, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{TTL: time.Hour})
			e.flush() // a copy still queued two windows later would be dropped as too late
		}},
		{name: "both missing", want: compare.Match, setup: func(e *env, k string) {}},
		{name: "missing in shadow", want: compare.MissingInShadow, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{})
			e.flush()
			must(e.t, e.smem.Delete(ctx, k))
		}},
		{name: "extra in shadow", want: compare.ExtraInShadow, setup: func(e *env, k string) {
			must(e.t, e.smem.Put(ctx, k, []byte("v"), kv.PutOptions{}))
		}},
		{name: "value mismatch", want: compare.ValueMismatch, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{})
			e.flush()
			must(e.t, e.smem.Put(ctx, k, []byte("SECRET-VALUE"), kv.PutOptions{}))
		}},
		{name: "json equivalent", want: compare.JSONEquivalent, setup: func(e *env, k string) {
			e.put(k, `{"a":1,"b":[1,2]}`, kv.PutOptions{})
			e.flush()
			must(e.t, e.smem.Put(ctx, k, []byte(`{"b":[1.0,2],"a":1}`), kv.PutOptions{}))
		}},
		{name: "ttl mismatch", want: compare.TTLMismatch, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{TTL: time.Hour})
			e.flush()
			must(e.t, e.smem.Put(ctx, k, []byte("v"), kv.PutOptions{TTL: 2 * time.Hour}))
		}},
		{name: "ttl within tolerance", want: compare.Match, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{TTL: time.Hour})
			e.flush()
			p, err := e.pmem.GetEntry(ctx, k)
			must(e.t, err)
			must(e.t, e.smem.Put(ctx, k, []byte("v"), kv.PutOptions{Expiration: p.Expiration.Add(2 * time.Second)}))
		}},
		{name: "shadow error", want: compare.ShadowError, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{})
			e.flush()
			e.shadow.SetOutage(true)
		}},
		{name: "primary error in live", stage: dualwrite.Live, want: compare.PrimaryError, setup: func(e *env, k string) {
			e.put(k, "v", kv.PutOptions{})
			e.flush()
			e.primary.SetOutage(true)
		}},
		{name: "missing in shadow in live", stage: dualwrite.Live, want: compare.MissingInShadow, setup: func(e *env, k string) {
			must(e.t, e.pmem.Put(ctx, k, []byte("v"), kv.PutOptions{}))
		}},
		{name: "pending: stale primary in its window", fresh: true, want: compare.Pending, setup: func(e *env, k string) {
			e.put(k, "v1", kv.PutOptions{})
			e.put(k, "v2", kv.PutOptions{})
			e.flush()
			e.primary.SetStaleRate(1) // Workers KV serving the old value
		}},
		{name: "pending: dirty key", want: compare.Pending, setup: func(e *env, k string) {
			e.shadow.SetOutage(true)
			e.put(k, "v", kv.PutOptions{})
			e.flush()
			e.shadow.SetOutage(false)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stage := c.stage
			if stage == 0 {
				stage = dualwrite.Shadow
			}
			e := newEnv(t, dualwrite.Config{
				Stage: stage, CompareRate: 1, ConsistencyWindow: window, RepairInterval: never,
				Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
			})
			const k = "wordle:games:SECRET-KEY"
			c.setup(e, k)
			if !c.fresh {
				e.clk.Advance(2 * window)
			}
			_, _ = e.store.Get(e.ctx(), k)
			e.flush()
			st := e.store.Stats()
			seen := c.want
			if c.want.Divergent() {
				seen = compare.Suspected // until a verification confirms it
			}
			if st.Comparisons[seen] != 1 || len(e.sink.records()) != 0 {
				t.Fatalf("comparisons %v, want one %s and no record yet", nonzero(st.Comparisons), seen)
			}
			if e.obs.kinds[seen] != 1 {
				t.Fatalf("observer saw %v", e.obs.kinds)
			}
			if c.want.Divergent() {
				e.clk.Advance(window)
				if n, err := e.store.Settle(e.ctx()); err != nil || n != 1 {
					t.Fatalf("Settle = %d, %v", n, err)
				}
				if st := e.store.Stats(); st.Verifications[c.want] != 1 || st.Confirmed != 1 || st.Divergences() != 1 {
					t.Fatalf("verifications %v, confirmed %d", nonzero(st.Verifications), st.Confirmed)
				}
			}
			recs := e.sink.records()
			if c.want.Divergent() != (len(recs) == 1) || len(recs) > 1 {
				t.Fatalf("sink got %d records for %s", len(recs), c.want)
			}
			for _, rec := range recs {
				text := fmt.Sprintf("%+v", rec)
				if rec.Kind != c.want || rec.Namespace != "wordle" || strings.Contains(text, "SECRET") {
					t.Fatalf("record %s", text)
				}
			}
		})
	}
}

// A newer write of the key that lands while the comparison waits for the
// other store makes it inconclusive, never a divergence.
func TestComparisonRacedByWrite(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1, ShadowTimeout: time.Hour})
	const k = "wordle:k"
	e.put(k, "v1", kv.PutOptions{})
	e.flush()
	e.shadow.SetLatency(time.Second, 0)
	if v, err := e.store.Get(e.ctx(), k); err != nil || string(v) != "v1" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	waitFor(t, "the comparison to read the shadow", func() bool { return e.shadow.Stats().InFlight == 1 })
	e.put(k, "v2", kv.PutOptions{})
	e.drive(time.Second)
	if st := e.store.Stats(); st.Comparisons[compare.Inconclusive] != 1 || st.Divergences() != 0 {
		t.Fatalf("comparisons %v, want one inconclusive", nonzero(st.Comparisons))
	}
	sameContents(t, e.pmem, e.smem)
}

// With a correct shadow, comparisons under concurrent writes, in shadow and
// in live, report no divergence: there is no consistency window here to
// hide one.
func TestNoDivergenceUnderConcurrentWrites(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1, Lanes: 4, LaneDepth: 4096, ShadowTimeout: time.Hour,
	}, realLatency)
	e.shadow.SetLatency(0, 150*time.Microsecond)
	e.primary.SetReplyLatency(0, 30*time.Microsecond)
	run := func(seed uint64) {
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				ctx := context.Background()
				for i := range 150 {
					k := key(rng.IntN(10))
					var err error
					switch rng.IntN(6) {
					case 0:
						err = e.store.Put(ctx, k, fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i), kv.PutOptions{TTL: time.Hour})
					case 1:
						err = e.store.Delete(ctx, k)
					default:
						if _, err = e.store.Get(ctx, k); isNotFound(err) {
							err = nil
						}
					}
					if err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	run(1)
	must(t, stepTo(e.ctx(), e.store, dualwrite.Live))
	run(2)
	e.flush()
	st := e.store.Stats()
	if st.Divergences() != 0 || len(e.sink.records()) != 0 {
		t.Fatalf("divergences reported by a correct shadow: %v", nonzero(st.Comparisons))
	}
	if st.Comparisons[compare.Match] == 0 {
		t.Fatalf("no comparison matched: %v", nonzero(st.Comparisons))
	}
	t.Logf("comparisons %v, skipped %d", nonzero(st.Comparisons), st.ComparisonsSkipped)
}

// Sampling is a function of the key: a sampled key is always compared, and
// the share of sampled keys follows the rate.
func TestSamplingIsByKey(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 0.25, ConsistencyWindow: -1})
	const keys = 2000
	round := func() uint64 {
		for i := range keys {
			_, _ = e.store.Get(e.ctx(), fmt.Sprintf("wordle:s%d", i))
		}
		e.flush()
		return e.store.Stats().Comparisons[compare.Match]
	}
	first := round()
	if second := round(); second != 2*first {
		t.Fatalf("second round compared %d keys, the first %d", second-first, first)
	}
	if share := float64(first) / keys; share < 0.2 || share > 0.3 {
		t.Fatalf("rate 0.25 compared %.3f of the keys", share)
	}
}

func nonzero(m map[compare.Kind]uint64) map[compare.Kind]uint64 {
	out := map[compare.Kind]uint64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
