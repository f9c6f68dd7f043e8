package report_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

var epoch = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// counted is a memory store that counts the requests it serves, by kind,
// and can fail or cancel on cue: the fault knobs of these tests.
type counted struct {
	*memory.Store
	lists, gets, puts, deletes atomic.Int64

	mu sync.Mutex
	// failGets makes GetMany return this error while positive, counting
	// down; failAll keeps failing.
	failGets int
	failErr  error
	failAll  bool
	// cancelAfter cancels cancel after that many GetMany calls.
	cancelAfter int
	cancel      context.CancelFunc
	// listFail makes every List fail.
	listFail error
}

func newCounted(clk clock.Clock) *counted {
	return &counted{Store: memory.New(memory.Config{Clock: clk})}
}

func (c *counted) List(ctx context.Context, o kv.ListOptions) (kv.ListResult, error) {
	c.lists.Add(1)
	if c.listFail != nil {
		return kv.ListResult{}, c.listFail
	}
	return c.Store.List(ctx, o)
}

func (c *counted) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	n := c.gets.Add(1)
	c.mu.Lock()
	fail := c.failAll || c.failGets > 0
	if c.failGets > 0 {
		c.failGets--
	}
	cancel := c.cancel != nil && n == int64(c.cancelAfter)
	c.mu.Unlock()
	if cancel {
		c.cancel()
	}
	if fail {
		return nil, c.failErr
	}
	return c.Store.GetMany(ctx, keys)
}

func (c *counted) PutMany(ctx context.Context, e []kv.Entry) error {
	c.puts.Add(1)
	return c.Store.PutMany(ctx, e)
}

func (c *counted) DeleteMany(ctx context.Context, keys []string) error {
	c.deletes.Add(1)
	return c.Store.DeleteMany(ctx, keys)
}

func (c *counted) requests() int64 {
	return c.lists.Load() + c.gets.Load() + c.puts.Load() + c.deletes.Load()
}

// plainStore hides every optional ability of the store inside.
type plainStore struct{ kv.Store }

func put(t testing.TB, s kv.Store, key, value string, ttl time.Duration) {
	t.Helper()
	if err := s.Put(context.Background(), key, []byte(value), kv.PutOptions{TTL: ttl}); err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
}

// fixture seeds every kind a scan can find across modules, and returns the
// counts a scan must report. The clock is then advanced so that one key is
// about to expire.
type fixture struct {
	clk             *clock.Fake
	primary, shadow *counted
}

func newFixture(t testing.TB) *fixture {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	p, s := f.primary, f.shadow
	both := func(key, pv, sv string, pttl, sttl time.Duration) {
		put(t, p, key, pv, pttl)
		put(t, s, key, sv, sttl)
	}
	both("wordle:a", "v1", "v1", 0, 0)
	both("wordle:b", "SECRET-VALUE-1", "SECRET-VALUE-1", time.Hour, time.Hour)
	put(t, p, "wordle:c", "only primary", 0)
	both("wordle:d", "SECRET-VALUE-2", "SECRET-VALUE-3", 0, 0)
	both("wordle:e", `{"a":1,"b":[1,2]}`, `{"b":[1,2.0],"a":1}`, 0, 0)
	both("loldle-emoji:a", "x", "x", 0, 0)
	put(t, s, "loldle-emoji:b", "only shadow", time.Hour)
	both("loldle-emoji:c", "x", "x", time.Hour, 0)
	both("loldle-emoji:d", "x", "x", time.Hour, 2*time.Hour)
	put(t, p, "trading:x", "about to expire", time.Minute)
	both("trading:y", "y", "y", 0, 0)
	both("config", "c", "c", 0, 0)
	put(t, p, "Bad:x", "not a module", 0)
	clk.Advance(57 * time.Second)
	return f
}

// want is the expected counts of the fixture, per module.
var fixtureWant = map[string]report.Counts{
	"wordle":       {PrimaryKeys: 5, ShadowKeys: 4, Compared: 5, Kinds: kinds(compare.Match, 2, compare.MissingInShadow, 1, compare.ValueMismatch, 1, compare.JSONEquivalent, 1)},
	"loldle-emoji": {PrimaryKeys: 3, ShadowKeys: 4, Compared: 4, Kinds: kinds(compare.Match, 1, compare.ExtraInShadow, 1, compare.TTLMismatch, 2)},
	"trading":      {PrimaryKeys: 2, ShadowKeys: 1, Compared: 2, Kinds: kinds(compare.Match, 1, compare.ExpiredOnOneSide, 1)},
	"":             {PrimaryKeys: 2, ShadowKeys: 1, Compared: 2, Kinds: kinds(compare.Match, 1, compare.MissingInShadow, 1)},
}

func kinds(pairs ...any) report.KindCounts {
	k := report.KindCounts{}
	for _, kind := range compare.Kinds {
		k[kind] = 0
	}
	for i := 0; i < len(pairs); i += 2 {
		k[pairs[i].(compare.Kind)] = int64(pairs[i+1].(int))
	}
	return k
}

// interrupt runs cfg and cancels it once the primary has served n bulk
// gets, returning Run's error; afterwards the primary serves normally.
func (f *fixture) interrupt(cfg report.Config, n int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.primary.cancelAfter, f.primary.cancel = n, cancel
	_, err := report.Run(ctx, cfg)
	f.primary.cancel = nil
	return err
}

func (f *fixture) config() report.Config {
	return report.Config{
		Primary:   report.Side{Store: f.primary, Name: "cloudflare_kv"},
		Shadow:    report.Side{Store: f.shadow, Name: "mongodb"},
		KeyPolicy: compare.KeyPlain,
		Secret:    []byte("test secret"),
		Clock:     f.clk,
	}
}

func run(t testing.TB, cfg report.Config) *report.Report {
	t.Helper()
	r, err := report.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}

// checkCounts compares the modules of r with want, exactly.
func checkCounts(t *testing.T, r *report.Report, want map[string]report.Counts) {
	t.Helper()
	if len(r.Modules) != len(want) {
		t.Errorf("modules = %d, want %d: %+v", len(r.Modules), len(want), r.Modules)
	}
	for _, m := range r.Modules {
		w, ok := want[m.Module]
		if !ok {
			t.Errorf("unexpected module %q", m.Module)
			continue
		}
		if m.PrimaryKeys != w.PrimaryKeys || m.ShadowKeys != w.ShadowKeys || m.Compared != w.Compared {
			t.Errorf("module %q: primary/shadow/compared = %d/%d/%d, want %d/%d/%d", m.Module,
				m.PrimaryKeys, m.ShadowKeys, m.Compared, w.PrimaryKeys, w.ShadowKeys, w.Compared)
		}
		for _, k := range compare.Kinds {
			if m.Kinds[k] != w.Kinds[k] {
				t.Errorf("module %q: %s = %d, want %d", m.Module, k, m.Kinds[k], w.Kinds[k])
			}
		}
	}
}

// sameResult compares what two runs found, ignoring when and at what cost.
func sameResult(t *testing.T, got, want *report.Report) {
	t.Helper()
	g, w := *got, *want
	for _, r := range []*report.Report{&g, &w} {
		r.StartedAt, r.FinishedAt, r.Resumed = time.Time{}, time.Time{}, false
		r.Primary.Requests, r.Shadow.Requests = report.Requests{}, report.Requests{}
		r.Divergences = append([]compare.Record(nil), r.Divergences...)
		for i := range r.Divergences {
			r.Divergences[i].At = time.Time{}
		}
	}
	gj, wj := mustJSON(t, &g), mustJSON(t, &w)
	if gj != wj {
		t.Fatalf("results differ:\n got %s\nwant %s", gj, wj)
	}
}
