package dualwrite_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

// The composite keeps the whole contract in every stage, abilities
// included (expiry, bulk, metadata: the stores have them all), and at the
// end of each case the two stores hold the same data (or, in off and
// complete, the other store holds nothing), with no divergence reported
// along the way.
func TestConformance(t *testing.T) {
	for _, stage := range dualwrite.Stages {
		t.Run(stage.String(), func(t *testing.T) {
			clk := clock.NewFake(start)
			var current *pair
			kvtest.Run(t, kvtest.Harness{
				New: func(t *testing.T) kv.Store {
					p := newPairOn(t, clk, dualwrite.Config{
						Stage: stage, CompareRate: 1, ConsistencyWindow: -1, ShadowTimeout: time.Hour,
					})
					current = p
					t.Cleanup(func() { checkParity(t, p, stage) })
					return p.store
				},
				// Time moves only once the lanes are idle, so that no copy
				// is written late.
				Advance:   func(d time.Duration) { current.flush(); clk.Advance(d) },
				Now:       clk.Now,
				ListsInfo: true,
				Writers:   4,
			})
		})
	}
}

func checkParity(t *testing.T, p *pair, stage dualwrite.Stage) {
	t.Helper()
	p.flush()
	st := p.store.Stats()
	if st.Divergences() != 0 || len(p.sink.records()) != 0 || st.Comparisons[compare.Suspected] != 0 {
		t.Errorf("divergences reported: %v", nonzero(st.Comparisons))
	}
	for r, n := range st.Drops {
		if n != 0 {
			t.Errorf("%d writes dropped (%s)", n, r)
		}
	}
	switch stage {
	case dualwrite.Off:
		if n := p.shadow.Len(); n != 0 {
			t.Errorf("stage off wrote %d keys to the shadow", n)
		}
	case dualwrite.Complete:
		if n := p.primary.Len(); n != 0 {
			t.Errorf("stage complete wrote %d keys to the primary", n)
		}
	default:
		sameContents(t, p.primary.Store, p.shadow.Store)
	}
}

type uncomparable struct {
	kv.Store
	_ []int
}

func TestNewValidation(t *testing.T) {
	a, b := memory.New(memory.Config{}), memory.New(memory.Config{})
	for name, cfg := range map[string]dualwrite.Config{
		"no primary":            {Shadow: b},
		"no shadow":             {Primary: a},
		"same store":            {Primary: a, Shadow: a},
		"unknown stage":         {Primary: a, Shadow: b, Stage: 42},
		"negative lanes":        {Primary: a, Shadow: b, Lanes: -1},
		"negative depth":        {Primary: a, Shadow: b, LaneDepth: -1},
		"negative queue bytes":  {Primary: a, Shadow: b, MaxQueueBytes: -1},
		"negative max dirty":    {Primary: a, Shadow: b, MaxDirty: -1},
		"negative timeout":      {Primary: a, Shadow: b, ShadowTimeout: -time.Second},
		"negative interval":     {Primary: a, Shadow: b, RepairInterval: -time.Second},
		"rate above 1":          {Primary: a, Shadow: b, CompareRate: 1.01},
		"rate below 0":          {Primary: a, Shadow: b, CompareRate: -0.5},
		"rate NaN":              {Primary: a, Shadow: b, CompareRate: math.NaN()},
		"negative failures":     {Primary: a, Shadow: b, Breaker: dualwrite.BreakerConfig{FailuresToOpen: -1}},
		"negative open timeout": {Primary: a, Shadow: b, Breaker: dualwrite.BreakerConfig{OpenTimeout: -1}},
		"huge half-open":        {Primary: a, Shadow: b, Breaker: dualwrite.BreakerConfig{HalfOpenRequests: math.MaxInt64}},
	} {
		s, err := dualwrite.New(cfg)
		if !errors.Is(err, dualwrite.ErrInvalidConfig) || s != nil {
			t.Errorf("%s: New = (store %v), %v; want ErrInvalidConfig", name, s != nil, err)
		}
	}
	// Two distinct uncomparable stores are fine, and a zero Config beyond
	// the stores means the defaults.
	s, err := dualwrite.New(dualwrite.Config{Primary: uncomparable{Store: a}, Shadow: uncomparable{Store: b}})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Stage != dualwrite.Off || st.Breaker != dualwrite.BreakerClosed {
		t.Fatalf("defaults: %+v", st)
	}
	must(t, s.Close(context.Background()))
}

func TestParseStage(t *testing.T) {
	for _, st := range dualwrite.Stages {
		got, err := dualwrite.ParseStage(strings.ToUpper(st.String()))
		if err != nil || got != st {
			t.Errorf("ParseStage(%q) = %v, %v", st, got, err)
		}
		text, err := st.MarshalText()
		must(t, err)
		var back dualwrite.Stage
		if err := back.UnmarshalText(text); err != nil || back != st {
			t.Errorf("text round trip of %s = %s, %v", st, back, err)
		}
	}
	if st, err := dualwrite.ParseStage("dual-write"); err != nil || st != dualwrite.DualWrite {
		t.Errorf("ParseStage(dual-write) = %v, %v", st, err)
	}
	if _, err := dualwrite.ParseStage("cutover"); !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Errorf("ParseStage(cutover) = %v", err)
	}
	if _, err := dualwrite.Stage(9).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown stage succeeded")
	}
}

// Each stage writes its authoritative store synchronously, the other one
// (if any) through the lanes, and serves reads from the authoritative store.
func TestStageTable(t *testing.T) {
	type want struct {
		readFrom  string // "primary" or "shadow"
		syncWrite string
		mirror    bool
	}
	table := map[dualwrite.Stage]want{
		dualwrite.Off:       {"primary", "primary", false},
		dualwrite.DualWrite: {"primary", "primary", true},
		dualwrite.Shadow:    {"primary", "primary", true},
		dualwrite.Live:      {"shadow", "shadow", true},
		dualwrite.Rampdown:  {"shadow", "shadow", true},
		dualwrite.Complete:  {"shadow", "shadow", false},
	}
	for stage, w := range table {
		t.Run(stage.String(), func(t *testing.T) {
			e := newEnv(t, dualwrite.Config{Stage: stage, ConsistencyWindow: -1})
			ctx := e.ctx()
			must(t, e.pmem.Put(ctx, "marker", []byte("primary"), kv.PutOptions{}))
			must(t, e.smem.Put(ctx, "marker", []byte("shadow"), kv.PutOptions{}))
			if v, err := e.store.Get(ctx, "marker"); err != nil || string(v) != w.readFrom {
				t.Fatalf("Get read %q, %v; want the %s's value", v, err, w.readFrom)
			}
			// Hold the other store's copy back with latency on the fake
			// clock: after Put returns, only the authoritative store has
			// the value.
			e.primary.SetLatency(time.Second, 0)
			e.shadow.SetLatency(time.Second, 0)
			sync, other := e.pmem, e.smem
			if w.syncWrite == "shadow" {
				sync, other = e.smem, e.pmem
				e.shadow.SetLatency(0, 0)
			} else {
				e.primary.SetLatency(0, 0)
			}
			e.put("k", "v", kv.PutOptions{})
			if v, err := sync.Get(ctx, "k"); err != nil || string(v) != "v" {
				t.Fatalf("authoritative store after Put: %q, %v", v, err)
			}
			if _, err := other.Get(ctx, "k"); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("other store written synchronously: %v", err)
			}
			e.drive(time.Second)
			_, err := other.Get(ctx, "k")
			if w.mirror != (err == nil) {
				t.Fatalf("other store after flush: %v (mirror %v)", err, w.mirror)
			}
		})
	}
}

// A failed authoritative write is the caller's error, and the other store is
// not written; the key is dirty because the write may have landed, and
// repair later reads both stores: here neither has it, so nothing is
// written and the key settles.
func TestAuthoritativeFailure(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, ConsistencyWindow: -1})
	e.primary.SetOutage(true)
	err := e.store.Put(e.ctx(), "k", []byte("v"), kv.PutOptions{})
	wantErr(t, "Put during a primary outage", err, kv.ErrUnavailable)
	e.flush()
	if e.smem.Len() != 0 {
		t.Fatal("the shadow was written although the primary refused")
	}
	if got := e.store.DirtyKeys(); len(got) != 1 || got[0] != "k" {
		t.Fatalf("dirty keys %q, want k", got)
	}
	e.primary.SetOutage(false)
	e.repair()
	sameContents(t, e.pmem, e.smem)
	if st := e.store.Stats(); st.Repairs[dualwrite.RepairUnneeded] != 1 || st.Dirty+st.Unsettled != 0 {
		t.Fatalf("repairs %v, dirty %d, unsettled %d; want one found unneeded (neither store has k)", st.Repairs, st.Dirty, st.Unsettled)
	}
	// Bad input never reaches a store and is not dirty.
	wantErr(t, "Put with a bad key", e.store.Put(e.ctx(), "", []byte("v"), kv.PutOptions{}), kv.ErrInvalidKey)
	wantErr(t, "Put with a short TTL", e.store.Put(e.ctx(), "k", []byte("v"), kv.PutOptions{TTL: time.Second}), kv.ErrInvalidTTL)
	if w := e.primary.Stats().Writes; w != 1 {
		t.Fatalf("primary saw %d writes, want only the first", w)
	}
}

// Both stores end with the same absolute expiry, in whole seconds, however
// late the copy is written.
func TestExpiryCopiedExactly(t *testing.T) {
	clk := clock.NewFake(start.Add(300 * time.Millisecond))
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, ShadowTimeout: time.Hour, RepairInterval: never,
	}, onClock(clk))
	e.shadow.SetLatency(10*time.Second, 0)
	e.put("ttl90", "v", kv.PutOptions{TTL: 90 * time.Second})
	e.put("ttl60", "v", kv.PutOptions{TTL: 60 * time.Second})
	e.put("abs", "v", kv.PutOptions{Expiration: clk.Now().Add(2 * time.Hour).Add(time.Millisecond)})
	e.drive(10 * time.Second) // each copy waits 10 s on the shadow's latency
	ctx := e.ctx()
	for k, lifetime := range map[string][2]time.Duration{
		"ttl90": {90 * time.Second, 92 * time.Second},
		"ttl60": {61 * time.Second, 62 * time.Second},
		"abs":   {2 * time.Hour, 2*time.Hour + 2*time.Second},
	} {
		p, err := e.pmem.GetEntry(ctx, k)
		must(t, err)
		if p.Expiration.Nanosecond() != 0 {
			t.Errorf("%s: expiry %v is not a whole second", k, p.Expiration)
		}
		if life := p.Expiration.Sub(start.Add(300 * time.Millisecond)); life < lifetime[0] || life > lifetime[1] {
			t.Errorf("%s: lives %s, want %s..%s", k, life, lifetime[0], lifetime[1])
		}
	}
	// ttl60's copy came 20 s late, too close to its expiry for the
	// contract's 60 s minimum: it was clamped and the key stays dirty until
	// the original expires, when repair deletes the copy.
	if got := e.store.DirtyKeys(); len(got) != 1 || got[0] != "ttl60" {
		t.Fatalf("dirty keys %q, want ttl60 (clamped copy)", got)
	}
	e.shadow.SetLatency(0, 0)
	clk.Advance(2 * time.Minute) // ttl60 has expired and settled
	e.repair()
	sameContents(t, e.pmem, e.smem)
}

// The caller may reuse its buffer once Put returns.
func TestValueCopied(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, ShadowTimeout: never}) // see drive
	e.shadow.SetLatency(time.Second, 0)
	buf := []byte("original")
	must(t, e.store.Put(e.ctx(), "k", buf, kv.PutOptions{}))
	copy(buf, "CHANGED!")
	e.drive(time.Second)
	if v, err := e.smem.Get(e.ctx(), "k"); err != nil || string(v) != "original" {
		t.Fatalf("shadow has %q, %v", v, err)
	}
}

// A listing that began before a stage flip ends on the store where it began.
func TestListAcrossFlip(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow})
	for i := range 5 {
		e.put(key(i), "v", kv.PutOptions{})
	}
	e.flush()
	must(t, e.smem.Put(e.ctx(), "wordle:only-in-shadow", []byte("x"), kv.PutOptions{}))
	page, err := e.store.List(e.ctx(), kv.ListOptions{Prefix: "wordle:", Limit: 2})
	must(t, err)
	must(t, e.smem.Delete(e.ctx(), "wordle:only-in-shadow"))
	must(t, stepTo(e.ctx(), e.store, dualwrite.Live))
	must(t, e.smem.Put(e.ctx(), "wordle:only-in-shadow", []byte("x"), kv.PutOptions{}))
	all := page.Keys
	for !page.Done {
		page, err = e.store.List(e.ctx(), kv.ListOptions{Prefix: "wordle:", Limit: 2, Cursor: page.Cursor})
		must(t, err)
		all = append(all, page.Keys...)
	}
	if len(all) != 5 {
		t.Fatalf("listing across the flip = %q, want the primary's 5 keys", all)
	}
	fresh, err := e.store.List(e.ctx(), kv.ListOptions{Prefix: "wordle:"})
	must(t, err)
	if len(fresh.Keys) != 6 {
		t.Fatalf("a new listing in live = %q, want the shadow's 6 keys", fresh.Keys)
	}
	for _, c := range []string{"d1p.", "d1x.abc", kv.EncodeCursor("wordle:k000")} {
		_, err := e.store.List(e.ctx(), kv.ListOptions{Prefix: "wordle:", Cursor: c})
		wantErr(t, "List with cursor "+c, err, kv.ErrInvalidCursor)
	}
}

type noExpiry struct{ kv.Store }

func TestGetEntryUnsupported(t *testing.T) {
	s, err := dualwrite.New(dualwrite.Config{Primary: noExpiry{memory.New(memory.Config{})}, Shadow: memory.New(memory.Config{})})
	must(t, err)
	defer s.Close(context.Background())
	_, err = s.GetEntry(context.Background(), "k")
	wantErr(t, "GetEntry on a primary without expiries", err, errors.ErrUnsupported)
}

type ctxKey struct{}

// The copy outlives the caller's cancellation and keeps its context values
// (the trace context), through Observer.AsyncContext.
func TestShadowContext(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	probe := &ctxProbe{Store: e.shadow}
	s, err := dualwrite.New(dualwrite.Config{Primary: e.primary, Shadow: probe, Stage: dualwrite.DualWrite},
		dualwrite.WithClock(e.clk), dualwrite.WithObserver(e.obs), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "trace-42"))
	must(t, s.Put(ctx, "k", []byte("v"), kv.PutOptions{}))
	cancel()
	must(t, s.Close(context.Background()))
	if v, err := e.smem.Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("shadow after a cancelled caller: %q, %v", v, err)
	}
	if probe.value != "trace-42" || !probe.token || probe.cancelled {
		t.Fatalf("shadow call context: value %q, observer token %v, cancelled %v", probe.value, probe.token, probe.cancelled)
	}
}

type ctxProbe struct {
	kv.Store
	value            string
	token, cancelled bool
}

func (p *ctxProbe) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	p.value, _ = ctx.Value(ctxKey{}).(string)
	_, p.token = ctx.Value(tokenKey{}).(int)
	p.cancelled = ctx.Err() != nil
	return p.Store.Put(ctx, key, value, opts)
}

// leaky is an Observer that wrongly hands back the caller's context.
type leaky struct{ dualwrite.NopObserver }

func (leaky) AsyncContext(caller context.Context, _ dualwrite.Op) context.Context { return caller }

// Even an Observer that keeps the caller's cancellation cannot cancel a copy.
func TestAsyncContextCannotCancel(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	s, err := dualwrite.New(dualwrite.Config{Primary: e.pmem, Shadow: e.shadow, Stage: dualwrite.DualWrite},
		dualwrite.WithClock(e.clk), dualwrite.WithObserver(leaky{}), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	defer s.Close(context.Background())
	e.shadow.SetLatency(time.Second, 0)
	ctx, cancel := context.WithCancel(context.Background())
	must(t, s.Put(ctx, "k", []byte("v"), kv.PutOptions{}))
	waitFor(t, "the copy to wait", func() bool { return e.shadow.Stats().InFlight == 1 })
	cancel()
	e.clk.Advance(time.Second)
	must(t, s.Flush(context.Background()))
	if v, err := e.smem.Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("shadow after the caller's cancellation: %q, %v", v, err)
	}
}
