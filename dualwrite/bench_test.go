package dualwrite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

const benchKeys = 1024

var benchKeyNames = func() []string {
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("wordle:games:%04d", i)
	}
	return keys
}()

func benchKey(i int) string { return benchKeyNames[i%benchKeys] }

var benchValue = []byte(`{"guesses":["crane","slate"],"solved":false,"streak":12,"updated":"2026-11-30T12:00:00Z"}`)

// BenchmarkOverhead compares the composite over two memory stores with the
// memory store alone, for Get and Put. Put flushes the lanes every 512
// writes inside the timed loop, so the copies' cost is counted (run with
// -cpu 1 to see it on one core) and none is dropped. allocs/op counts every
// allocation of the process, the workers' included.
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	// journaled: none, true (package journal), or the same journal
	// without its Recorder, so that marks wait for the group commit as
	// they did before the mark log (the process-death record's cost is the
	// difference).
	composite := func(b *testing.B, stage dualwrite.Stage, rate float64, journaled ...bool) *dualwrite.Store {
		cfg := dualwrite.Config{
			Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{}),
			Stage: stage, CompareRate: rate, ConsistencyWindow: -1, MaxDirty: 1 << 20,
		}
		if len(journaled) > 0 {
			j, err := journal.Open(filepath.Join(b.TempDir(), "settle.db"), journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = j.Close() })
			cfg.Journal = j
			if !journaled[0] {
				cfg.Journal = commitsOnly{j}
			}
		}
		s, err := dualwrite.New(cfg, dualwrite.WithLogger(discardLogger()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	get := func(b *testing.B, s kv.Store) {
		for i := range benchKeys {
			must(b, s.Put(ctx, benchKey(i), benchValue, kv.PutOptions{}))
		}
		if f, ok := s.(interface{ Flush(context.Context) error }); ok {
			must(b, f.Flush(ctx))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if _, err := s.Get(ctx, benchKey(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	put := func(b *testing.B, s kv.Store, keys ...string) {
		if keys == nil {
			keys = benchKeyNames
		}
		f, _ := s.(*dualwrite.Store)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := s.Put(ctx, keys[i%len(keys)], benchValue, kv.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			if f != nil && i%512 == 511 {
				must(b, f.Flush(ctx))
			}
		}
		if f != nil {
			st := f.Stats()
			var drops uint64
			for _, n := range st.Drops {
				drops += n
			}
			b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
		}
	}
	b.Run("Get/memory", func(b *testing.B) { get(b, memory.New(memory.Config{})) })
	b.Run("Get/dualwrite-shadow-rate0", func(b *testing.B) { get(b, composite(b, dualwrite.Shadow, 0)) })
	b.Run("Get/dualwrite-shadow-rate0.01", func(b *testing.B) { get(b, composite(b, dualwrite.Shadow, 0.01)) })
	b.Run("Get/dualwrite-shadow-rate1", func(b *testing.B) { get(b, composite(b, dualwrite.Shadow, 1)) })
	b.Run("Get/dualwrite-shadow-rate0-journal", func(b *testing.B) { get(b, composite(b, dualwrite.Shadow, 0, true)) })
	b.Run("Put/memory", func(b *testing.B) { put(b, memory.New(memory.Config{})) })
	b.Run("Put/dualwrite", func(b *testing.B) { put(b, composite(b, dualwrite.DualWrite, 0)) })
	// Hot keys: after the first write of each, a key is already in the
	// journal and costs it nothing.
	b.Run("Put/dualwrite-journal", func(b *testing.B) { put(b, composite(b, dualwrite.DualWrite, 0, true)) })
	// Every write a key not yet in the settle set: each mark is committed.
	b.Run("Put/memory-newkeys", func(b *testing.B) { put(b, memory.New(memory.Config{}), newKeys...) })
	b.Run("Put/dualwrite-newkeys", func(b *testing.B) { put(b, composite(b, dualwrite.DualWrite, 0), newKeys...) })
	b.Run("Put/dualwrite-journal-newkeys", func(b *testing.B) { put(b, composite(b, dualwrite.DualWrite, 0, true), newKeys...) })
	// The same with the mark log's record left out: what the
	// process-death record costs a new key is the difference.
	b.Run("Put/dualwrite-journal-newkeys-norecord", func(b *testing.B) {
		put(b, composite(b, dualwrite.DualWrite, 0, false), newKeys...)
	})
}

// commitsOnly is a Journal without the Recorder ability of the one it
// wraps.
type commitsOnly struct{ j *journal.Journal }

func (c commitsOnly) Load(ctx context.Context) (map[string]dualwrite.Mark, bool, error) {
	return c.j.Load(ctx)
}

func (c commitsOnly) Commit(ctx context.Context, changes map[string]dualwrite.Mark, reconcile bool) error {
	return c.j.Commit(ctx, changes, reconcile)
}

// BenchmarkCallerPath measures what a Put costs its caller alone: the
// shadow never answers, so each of the 1,024 keys has one copy waiting in
// its lane and every later write only replaces it (coalescing); no worker
// runs. Compare with Put/memory of BenchmarkOverhead, the same store alone.
func BenchmarkCallerPath(b *testing.B) {
	ctx := context.Background()
	for _, journaled := range []bool{false, true} {
		name := "Put/dualwrite"
		if journaled {
			name += "-journal"
		}
		b.Run(name, func(b *testing.B) {
			stuck, err := kvfault.New(memory.New(memory.Config{}), kvfault.Config{Latency: time.Hour, Clock: clock.NewFake(start)})
			if err != nil {
				b.Fatal(err)
			}
			cfg := dualwrite.Config{
				Primary: memory.New(memory.Config{}), Shadow: stuck, Stage: dualwrite.DualWrite,
				LaneDepth: 4096, ConsistencyWindow: -1, ShadowTimeout: never, RepairInterval: never,
			}
			if journaled {
				j, err := journal.Open(filepath.Join(b.TempDir(), "settle.db"), journal.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				cfg.Journal = j
			}
			s, err := dualwrite.New(cfg, dualwrite.WithLogger(discardLogger()))
			if err != nil {
				b.Fatal(err)
			}
			for i := range benchKeys {
				must(b, s.Put(ctx, benchKey(i), benchValue, kv.PutOptions{}))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := s.Put(ctx, benchKey(i), benchValue, kv.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if st := s.Stats(); st.Drops[dualwrite.DropLaneFull] != 0 {
				b.Fatalf("%d copies dropped: a worker ran", st.Drops[dualwrite.DropLaneFull])
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_ = s.Close(cctx)
		})
	}
}

// newKeys are more keys than a benchmark writes, so that each write is a
// key's first.
var newKeys = func() []string {
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = fmt.Sprintf("wordle:new:%07d", i)
	}
	return keys
}()

// BenchmarkVerificationCost reports the requests verification spends per
// 1,000 written keys on each store (the floor is 10 bulk gets of 100).
func BenchmarkVerificationCost(b *testing.B) {
	ctx := context.Background()
	var perPrimary, perShadow float64
	for b.Loop() {
		clk := clock.NewFake(start)
		p := &counted{Store: memory.New(memory.Config{Clock: clk})}
		sh := &counted{Store: memory.New(memory.Config{Clock: clk})}
		s, err := dualwrite.New(dualwrite.Config{Primary: p, Shadow: sh, Stage: dualwrite.DualWrite, RepairInterval: never},
			dualwrite.WithClock(clk), dualwrite.WithLogger(discardLogger()))
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			must(b, s.Put(ctx, fmt.Sprintf("wordle:v%04d", i), benchValue, kv.PutOptions{}))
		}
		must(b, s.Flush(ctx))
		p0, s0 := p.requests(), sh.requests()
		clk.Advance(time.Minute)
		if n, err := s.Settle(ctx); err != nil || n != 1000 {
			b.Fatalf("Settle = %d, %v", n, err)
		}
		perPrimary, perShadow = float64(p.requests()-p0), float64(sh.requests()-s0)
		must(b, s.Close(ctx))
	}
	b.ReportMetric(perPrimary, "primary-requests/1000-keys")
	b.ReportMetric(perShadow, "shadow-requests/1000-keys")
}

// BenchmarkZipfLaneFull: 32 writers on Zipf-distributed keys (s = 1.1 over
// 10,000 keys) with a shadow that takes 100 µs a copy, which the default
// lanes cannot keep up with; lane_full-share is the share of copies
// dropped as lane_full, without and with coalescing.
func BenchmarkZipfLaneFull(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "coalescing-off"
		if on {
			name = "coalescing-on"
		}
		b.Run(name, func(b *testing.B) {
			was := dualwrite.SetCoalescing(on)
			defer dualwrite.SetCoalescing(was)
			shadow, err := kvfault.New(memory.New(memory.Config{}), kvfault.Config{Latency: 100 * time.Microsecond, RealLatency: true})
			if err != nil {
				b.Fatal(err)
			}
			s, err := dualwrite.New(dualwrite.Config{
				Primary: memory.New(memory.Config{}), Shadow: shadow, Stage: dualwrite.DualWrite,
				ConsistencyWindow: -1, ShadowTimeout: time.Hour, RepairInterval: never,
			}, dualwrite.WithLogger(discardLogger()))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			const writers = 32
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(w), 11)), 1.1, 1, 9999)
					for next.Add(1) <= int64(b.N) {
						k := fmt.Sprintf("wordle:z%04d", zipf.Uint64())
						if err := s.Put(ctx, k, benchValue, kv.PutOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(st.Drops[dualwrite.DropLaneFull])/float64(b.N), "lane_full-share")
			b.ReportMetric(float64(st.Coalesced)/float64(b.N), "coalesced-share")
			must(b, s.Close(ctx))
		})
	}
}

// BenchmarkLatency measures what the caller waits for with a primary of
// 2 ms and a shadow that is healthy (2 ms), ten times slower (20 ms) or down,
// against the primary alone. Each iteration makes one call on the primary
// alone and one on the composite, interleaved and in alternating order, so
// that both see the same machine; p50-ratio and p99-ratio are the
// composite's percentiles divided by the primary's. Reads are all compared
// (CompareRate 1), the worst case.
//
// The tail of a 2 ms sleep is the scheduler's, and it swings p99-ratio
// both ways from run to run. So each composite call also measures the
// primary call inside it: added-p99-us is the 99th percentile of the time
// the composite adds to its primary call, which no sleep jitter enters, and
// p99-added-ratio is (the primary's p99 + added-p99) / the primary's p99: the
// p99 ratio that the composite's own work accounts for (an estimate: tails
// of sums do not add exactly). Run with a fixed count, e.g. -benchtime=3000x.
func BenchmarkLatency(b *testing.B) {
	ctx := context.Background()
	for _, shadow := range []struct {
		name  string
		setup func(*kvfault.Store)
	}{
		{"healthy", func(s *kvfault.Store) { s.SetLatency(2*time.Millisecond, 0) }},
		{"slow10x", func(s *kvfault.Store) { s.SetLatency(20*time.Millisecond, 0) }},
		{"down", func(s *kvfault.Store) { s.SetOutage(true) }},
	} {
		for _, op := range []string{"Put", "Get"} {
			b.Run(shadow.name+"/"+op, func(b *testing.B) {
				pmem, smem := memory.New(memory.Config{}), memory.New(memory.Config{})
				faultyAlone, err := kvfault.New(memory.New(memory.Config{}), kvfault.Config{Latency: 2 * time.Millisecond})
				must(b, err)
				alone := timed{faultyAlone}
				faulty, err := kvfault.New(pmem, kvfault.Config{Latency: 2 * time.Millisecond})
				must(b, err)
				primary := timed{faulty}
				sh, err := kvfault.New(smem, kvfault.Config{})
				must(b, err)
				for i := range benchKeys {
					e := kv.Entry{Key: benchKey(i), Value: benchValue}
					must(b, pmem.PutMany(ctx, []kv.Entry{e}))
					must(b, smem.PutMany(ctx, []kv.Entry{e}))
					must(b, faultyAlone.Inner().Put(ctx, e.Key, e.Value, kv.PutOptions{}))
				}
				shadow.setup(sh)
				s, err := dualwrite.New(dualwrite.Config{
					Primary: primary, Shadow: sh, Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1,
				}, dualwrite.WithLogger(discardLogger()))
				must(b, err)
				call := func(st kv.Store, i int) (total, inner time.Duration) {
					ctx := context.WithValue(ctx, innerKey{}, &inner)
					start := time.Now()
					var err error
					if op == "Put" {
						err = st.Put(ctx, benchKey(i), benchValue, kv.PutOptions{})
					} else {
						_, err = st.Get(ctx, benchKey(i))
					}
					total = time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					return total, inner
				}
				var base, comp, added []time.Duration
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if i%2 == 1 {
						d, _ := call(alone, i)
						base = append(base, d)
					}
					d, inner := call(s, i)
					comp = append(comp, d)
					added = append(added, d-inner)
					if i%2 == 0 {
						d, _ := call(alone, i)
						base = append(base, d)
					}
				}
				b.StopTimer()
				closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_ = s.Close(closeCtx)
				cancel()
				p := func(ds []time.Duration, q float64) time.Duration {
					slices.Sort(ds)
					return ds[min(len(ds)-1, int(q*float64(len(ds))))]
				}
				b.ReportMetric(float64(p(comp, 0.50))/float64(p(base, 0.50)), "p50-ratio")
				b.ReportMetric(float64(p(comp, 0.99))/float64(p(base, 0.99)), "p99-ratio")
				b.ReportMetric(float64(p(added, 0.99).Nanoseconds())/1000, "added-p99-us")
				b.ReportMetric(float64(p(base, 0.99)+p(added, 0.99))/float64(p(base, 0.99)), "p99-added-ratio")
				b.ReportMetric(float64(p(base, 0.50).Microseconds())/1000, "alone-p50-ms")
				b.ReportMetric(float64(p(comp, 0.50).Microseconds())/1000, "dual-p50-ms")
				b.ReportMetric(float64(p(base, 0.99).Microseconds())/1000, "alone-p99-ms")
				b.ReportMetric(float64(p(comp, 0.99).Microseconds())/1000, "dual-p99-ms")
			})
		}
	}
}

// innerKey carries, in a benchmark caller's context, where timed stores the
// duration of the primary call made for that caller.
type innerKey struct{}

// timed is the primary of BenchmarkLatency: it adds to the caller's
// *time.Duration, when the context carries one, the time its calls take.
// Asynchronous work (repairs) has other contexts and is not counted.
type timed struct{ *kvfault.Store }

func (t timed) note(ctx context.Context, start time.Time) {
	if d, ok := ctx.Value(innerKey{}).(*time.Duration); ok {
		*d += time.Since(start)
	}
}

func (t timed) Get(ctx context.Context, key string) ([]byte, error) {
	defer t.note(ctx, time.Now())
	return t.Store.Get(ctx, key)
}

func (t timed) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	defer t.note(ctx, time.Now())
	return t.Store.GetEntry(ctx, key)
}

func (t timed) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	defer t.note(ctx, time.Now())
	return t.Store.Put(ctx, key, value, opts)
}
