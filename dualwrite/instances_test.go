package dualwrite_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// world is one primary and one shadow that several dual-write stores
// share, with what the test needs to judge every report and every repair
// at the moment it is made: the order in which the primary acknowledged
// each key's values, and the shadow's state, read exactly under its own
// lock.
type world struct {
	t      *testing.T
	clk    *clock.Fake
	window time.Duration
	acks   *ackLog        // the primary's memory store, recording each write
	watch  *watchedShadow // the shadow's, judging each repair's write
	red    *compare.Redactor
	stores []*dualwrite.Store

	mu                                sync.Mutex
	reports, falseReports             int
	repairWrites, backwards, unknowns int
	failures                          []string
}

func (w *world) fail(format string, args ...any) {
	if len(w.failures) < 5 {
		w.failures = append(w.failures, fmt.Sprintf(format, args...))
	}
}

// ackLog is the primary's store: it records, per key, the values it
// acknowledged, in order, with the time of each.
type ackLog struct {
	*memory.Store
	clk  clock.Clock
	mu   sync.Mutex
	acks map[string][]ack
}

type ack struct {
	value string
	at    time.Time
}

func (a *ackLog) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.Store.Put(ctx, key, value, opts); err != nil {
		return err
	}
	a.acks[key] = append(a.acks[key], ack{value: string(value), at: a.clk.Now()})
	return nil
}

func (a *ackLog) history(key string) []ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ack(nil), a.acks[key]...)
}

// version is the place of value in key's acknowledgements, -1 if the
// primary never acknowledged it (a write around the layer).
func version(h []ack, value string) int {
	for i, a := range h {
		if a.value == value {
			return i
		}
	}
	return -1
}

// watchedShadow is the shadow's store. Every write takes its lock, so a
// repair's write is judged against exactly the state it replaces.
type watchedShadow struct {
	*memory.Store
	w  *world
	mu sync.Mutex
}

type repairMark struct{}

func (s *watchedShadow) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Value(repairMark{}) != nil {
		s.w.judgeRepair(key, string(value))
	}
	return s.Store.Put(ctx, key, value, opts)
}

// around writes key in the shadow behind every store: a divergence that
// only verification can find.
func (s *watchedShadow) around(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	must(s.w.t, s.Store.Put(context.Background(), key, []byte(value), kv.PutOptions{}))
}

// judgeRepair counts a repair that replaces the shadow's value with one
// the primary acknowledged before it.
func (w *world) judgeRepair(key, value string) {
	h := w.acks.history(key)
	cur, err := w.watch.Store.Get(context.Background(), key)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.repairWrites++
	nv := version(h, value)
	if nv < 0 {
		w.unknowns++
		w.fail("a repair of %s wrote %q, which the primary never acknowledged", key, value)
		return
	}
	if err == nil {
		if cv := version(h, string(cur)); cv > nv {
			w.backwards++
			w.fail("a repair of %s replaced %q (acknowledged %d) with the older %q (%d)", key, cur, cv, value, nv)
		}
	}
}

// judgeReport checks a confirmed divergence against both stores, now. Its
// primary state must be a value the primary held within the last window
// (a read is never staler) and acknowledged more than a window ago (so
// that its copy, from whichever instance, was not still on its way);
// unless some later write of the key was acknowledged within the last
// window (whose copy may be on its way, and which the reporting instance
// cannot see), the report must also be exactly what the stores hold now,
// they must differ, and no store may have a copy of the key queued or in
// flight.
func (w *world) judgeReport(by int, rec compare.Record) {
	now := w.clk.Now()
	h := w.acks.history(rec.Key)
	p, perr := w.acks.Store.Get(context.Background(), rec.Key)
	w.watch.mu.Lock()
	s, serr := w.watch.Store.Get(context.Background(), rec.Key)
	w.watch.mu.Unlock()
	pending, copies := false, ""
	for i, st := range w.stores {
		p := st.CopyPending(rec.Key)
		pending, copies = pending || p, copies+fmt.Sprintf(" %d:%v", i, p)
	}
	digest := func(v []byte, err error) compare.Digest {
		return w.red.Digest(compare.Observation{Found: err == nil, Value: v})
	}
	held, old, recent := !rec.Primary.Present && len(h) == 0, !rec.Primary.Present, false
	for i, a := range h {
		recent = recent || now.Sub(a.at) < w.window
		if rec.Primary.Present && w.red.Digest(compare.Observation{Found: true, Value: []byte(a.value)}).Hash == rec.Primary.Hash {
			held = i == len(h)-1 || now.Sub(h[i+1].at) <= w.window
			old = now.Sub(a.at) >= w.window
		}
	}
	exact := digest(p, perr) == rec.Primary && digest(s, serr).Hash == rec.Shadow.Hash && digest(s, serr).Present == rec.Shadow.Present
	equal := (perr == nil) == (serr == nil) && bytes.Equal(p, s)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reports++
	if !held || !old || (!recent && (!exact || equal || pending)) {
		w.falseReports++
		w.fail("false report of %s (%s) by instance %d at %v (now %v): held %v, old %v, recent %v, exact %v, equal %v, pending %v;"+
			" reported primary %v shadow %v, now primary %v shadow %v; copies pending%s; acknowledged%s",
			rec.Key, rec.Kind, by, rec.At.Sub(start), now.Sub(start), held, old, recent, exact, equal, pending,
			w.named(rec.Primary, h, p, s), w.named(rec.Shadow, h, p, s), readValue(p, perr), readValue(s, serr), copies, ackAges(h, now))
	}
}

// named is the value d is the digest of, among the acknowledged ones and
// the stores' current values (p, s), for a failure.
func (w *world) named(d compare.Digest, h []ack, p, s []byte) string {
	if !d.Present {
		return "absent"
	}
	for _, v := range append([][]byte{p, s}, ackValues(h)...) {
		if w.red.Digest(compare.Observation{Found: true, Value: v}).Hash == d.Hash {
			return string(v)
		}
	}
	return "unknown " + d.Hash
}

func ackValues(h []ack) [][]byte {
	out := make([][]byte, len(h))
	for i, a := range h {
		out[i] = []byte(a.value)
	}
	return out
}

func readValue(v []byte, err error) string {
	if err != nil {
		return "absent"
	}
	return string(v)
}

// ackAges lists the values of h with their age at now, for a failure.
func ackAges(h []ack, now time.Time) string {
	var b strings.Builder
	for _, a := range h {
		fmt.Fprintf(&b, " %s (%v ago)", a.value, now.Sub(a.at))
	}
	return b.String()
}

// judgeSink hands every confirmed divergence of instance by to the world's
// judge.
type judgeSink struct {
	w  *world
	by int
}

func (j judgeSink) Divergence(_ context.Context, rec compare.Record) { j.w.judgeReport(j.by, rec) }

// repairTagger marks the context of repairs, which the shadow's store
// judges.
type repairTagger struct{ dualwrite.NopObserver }

func (repairTagger) AsyncContext(caller context.Context, op dualwrite.Op) context.Context {
	ctx := context.WithoutCancel(caller)
	if op == dualwrite.OpRepair {
		ctx = context.WithValue(ctx, repairMark{}, true)
	}
	return ctx
}

// soak scales the test's rounds by KVSHADOW_SOAK (default 1).
func soak(t *testing.T) int {
	n, err := strconv.Atoi(os.Getenv("KVSHADOW_SOAK"))
	if err != nil || n < 1 {
		return 1
	}
	t.Logf("KVSHADOW_SOAK=%d", n)
	return n
}

// Two instances (separate Stores, each with its own journal) over one
// primary and one shadow: Zipf-distributed hot keys written and read by
// both, a slow, jittery shadow with shallow lanes (copies coalesce, drop
// and time out), a few values changed in the shadow behind the layer (the
// divergences there are to find), and for the second half a primary that
// serves stale reads within its consistency window. Every report is
// judged against both stores when it is made, every repair's write
// against the value it replaces: no report is false, no repair moves the
// shadow backwards, and after settling the stores are identical and every
// set and journal empty. KVSHADOW_SOAK=n runs n times the rounds.
func TestInstancesConfirmOnlyRealDivergences(t *testing.T) {
	const (
		window     = time.Minute
		step       = time.Second
		keys       = 300
		workers    = 2 // per instance
		opsARound  = 12
		staleShare = 0.3
	)
	rounds := 160 * soak(t)
	clk := clock.NewFake(start)
	w := &world{t: t, clk: clk, window: window}
	var err error
	if w.red, err = compare.NewRedactor(compare.KeyPlain, nil); err != nil {
		t.Fatal(err)
	}
	w.acks = &ackLog{Store: memory.New(memory.Config{Clock: clk}), clk: clk, acks: map[string][]ack{}}
	w.watch = &watchedShadow{Store: memory.New(memory.Config{Clock: clk}), w: w}
	primary, err := kvfault.New(w.acks, kvfault.Config{Name: "primary", Clock: clk, Seed: 1, StaleWindow: window})
	must(t, err)
	shadow, err := kvfault.New(w.watch, kvfault.Config{
		Name: "shadow", Clock: clk, RealLatency: true, Seed: 2,
		Latency: 100 * time.Microsecond, Jitter: 2 * time.Millisecond,
	})
	must(t, err)
	var journals []*journal.Journal
	for i := range 2 {
		j, err := journal.Open(filepath.Join(t.TempDir(), fmt.Sprintf("instance-%d.journal", i)), journal.Options{NoSync: true})
		must(t, err)
		t.Cleanup(func() { j.Close() }) // after the Store's Close, which runs first
		journals = append(journals, j)
		st, err := dualwrite.New(dualwrite.Config{
			Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 0.25,
			Lanes: 4, LaneDepth: 8, ConsistencyWindow: window, RepairInterval: 5 * time.Second,
			ShadowTimeout: 15 * time.Second, Breaker: dualwrite.BreakerConfig{OpenTimeout: 4 * time.Second},
			Journal: j, Redactor: w.red, Sink: judgeSink{w, i},
		}, dualwrite.WithClock(clk), dualwrite.WithObserver(repairTagger{}), dualwrite.WithLogger(discardLogger()))
		must(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := st.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		w.stores = append(w.stores, st)
	}

	ctx := context.Background()
	var writes, reads int
	var opsMu sync.Mutex
	around := 0
	for round := range rounds {
		if round == rounds/2 {
			primary.SetStaleRate(staleShare)
		}
		var wg sync.WaitGroup
		for i, st := range w.stores {
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(round), uint64(i*workers+g)))
					zipf := rand.NewZipf(rng, 1.1, 1, keys-1)
					nw, nr := 0, 0
					for n := range opsARound {
						k := fmt.Sprintf("wordle:z%03d", zipf.Uint64())
						if rng.Float64() < 0.75 {
							v := fmt.Sprintf("i%d.g%d.r%d.n%d", i, g, round, n) // every value unique
							if err := st.Put(ctx, k, []byte(v), kv.PutOptions{}); err != nil {
								t.Errorf("Put: %v", err)
							}
							nw++
						} else {
							if _, err := st.Get(ctx, k); err != nil && !isNotFound(err) {
								t.Errorf("Get: %v", err)
							}
							nr++
						}
					}
					opsMu.Lock()
					writes, reads = writes+nw, reads+nr
					opsMu.Unlock()
				}()
			}
		}
		wg.Wait()
		if round%10 == 5 {
			// A key written once, whose copy landed, then changed in the
			// shadow behind the layer: a real divergence, to be reported.
			k := fmt.Sprintf("wordle:cold%03d", round)
			must(t, w.stores[0].Put(ctx, k, []byte("cold"), kv.PutOptions{}))
			must(t, w.stores[0].Flush(ctx))
			if v, err := w.watch.Store.Get(ctx, k); err == nil && string(v) == "cold" {
				w.watch.around(k, fmt.Sprintf("around.r%d", round))
				around++
			}
		}
		clk.Advance(step)
	}

	// Settle: no more traffic; the clock moves a window at a time until
	// both stores agree on every key and every instance is empty.
	settled := false
	passes := 0
	for ; passes < 200 && !settled; passes++ {
		clk.Advance(window / 2)
		settled = true
		for _, st := range w.stores {
			if _, err := st.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			st.RepairDirty()
			must(t, st.Flush(ctx))
			s := st.Stats()
			settled = settled && s.Dirty+s.Unsettled+s.Suspects == 0 && s.Queued == 0
		}
	}
	divergent := differingKeys(t, w.acks.Store, w.watch.Store)
	for i, j := range journals {
		waitFor(t, fmt.Sprintf("instance %d's journal to empty", i), func() bool { n, err := j.Len(); return err == nil && n == 0 })
	}
	var total dualwrite.Stats
	for _, st := range w.stores {
		s := st.Stats()
		total.Confirmed += s.Confirmed
		total.Cleared += s.Cleared
		total.Coalesced += s.Coalesced
		total.Comparisons = addKinds(total.Comparisons, s.Comparisons)
		total.Verifications = addKinds(total.Verifications, s.Verifications)
		for r, n := range s.Drops {
			if total.Drops == nil {
				total.Drops = map[dualwrite.DropReason]uint64{}
			}
			total.Drops[r] += n
		}
		if total.Repairs == nil {
			total.Repairs = map[dualwrite.RepairOutcome]uint64{}
		}
		for o, n := range s.Repairs {
			total.Repairs[o] += n
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d rounds: %d writes, %d reads over %d keys by 2 instances; %d stale primary reads; %d values changed behind the layer",
		rounds, writes, reads, keys, primary.Stats().Stale, around)
	t.Logf("confirmed %d (false %d), suspicions cleared %d, verifications %v, comparisons %v",
		w.reports, w.falseReports, total.Cleared, nonzero(total.Verifications), nonzero(total.Comparisons))
	t.Logf("repairs %v, repair writes %d (backwards %d), drops %v, coalesced %d; settled after %d passes: %v, %d keys divergent",
		total.Repairs, w.repairWrites, w.backwards, total.Drops, total.Coalesced, passes, settled, len(divergent))
	for _, f := range w.failures {
		t.Error(f)
	}
	if w.falseReports != 0 || w.backwards != 0 || w.unknowns != 0 {
		t.Errorf("%d false reports of %d, %d repairs backwards, %d repairs of unknown values", w.falseReports, w.reports, w.backwards, w.unknowns)
	}
	if !settled || len(divergent) != 0 {
		t.Errorf("settled %v, %d keys divergent after settling: %v", settled, len(divergent), divergent)
	}
	if w.reports < around {
		t.Errorf("%d values changed behind the layer, %d reports", around, w.reports)
	}
}

func addKinds(dst, src map[compare.Kind]uint64) map[compare.Kind]uint64 {
	if dst == nil {
		dst = map[compare.Kind]uint64{}
	}
	for k, n := range src {
		dst[k] += n
	}
	return dst
}

// differingKeys lists the keys whose value differs between a and b.
func differingKeys(t *testing.T, a, b *memory.Store) []string {
	t.Helper()
	ea, eb := dump(t, a), dump(t, b)
	byKey := map[string][]byte{}
	for _, e := range eb {
		byKey[e.Key] = e.Value
	}
	var out []string
	for _, e := range ea {
		if v, ok := byKey[e.Key]; !ok || !bytes.Equal(v, e.Value) {
			out = append(out, e.Key)
		}
		delete(byKey, e.Key)
	}
	for k := range byKey {
		out = append(out, k)
	}
	return out
}
