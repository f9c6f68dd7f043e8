package dualwrite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// never is a RepairInterval for tests that run repair passes themselves and
// move the clock by minutes.
const never = 10 * 365 * 24 * time.Hour

// start is a whole second, as most tests want; expiry tests move off it.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// env is a dual-write store over two memory stores, each behind a kvfault
// wrapper, on a fake clock.
type env struct {
	t               *testing.T
	clk             *clock.Fake
	pmem, smem      *memory.Store
	primary, shadow *kvfault.Store
	store           *dualwrite.Store
	tally           *tally // between the store and the primary
	obs             *recorder
	sink            *sinkRecorder
}

type setup struct {
	clk    *clock.Fake
	pc, sc kvfault.Config
	log    io.Writer // nil: discarded
}

type envOption func(*setup)

// realLatency makes both fault wrappers wait in real time.
func realLatency(s *setup) { s.pc.RealLatency, s.sc.RealLatency = true, true }

// onClock puts the env on clk.
func onClock(clk *clock.Fake) envOption { return func(s *setup) { s.clk = clk } }

func newEnv(t *testing.T, cfg dualwrite.Config, opts ...envOption) *env {
	t.Helper()
	su := setup{clk: clock.NewFake(start)}
	for _, o := range opts {
		o(&su)
	}
	e := &env{t: t, clk: su.clk, sink: &sinkRecorder{}}
	e.pmem = memory.New(memory.Config{Clock: e.clk})
	e.smem = memory.New(memory.Config{Clock: e.clk})
	pc, sc := su.pc, su.sc
	pc.Name, pc.Clock, pc.Seed = "primary", e.clk, pc.Seed+1
	sc.Name, sc.Clock, sc.Seed = "shadow", e.clk, sc.Seed+2
	var err error
	if e.primary, err = kvfault.New(e.pmem, pc); err != nil {
		t.Fatal(err)
	}
	if e.shadow, err = kvfault.New(e.smem, sc); err != nil {
		t.Fatal(err)
	}
	e.tally = &tally{Store: e.primary, eg: e.primary}
	cfg.Primary, cfg.Shadow = e.tally, e.shadow
	if cfg.FenceInterval == 0 {
		cfg.FenceInterval = -1 // no tee writes a binding here; the fence's tests set one
	}
	if cfg.Sink == nil {
		cfg.Sink = e.sink
	}
	e.obs = newRecorder(t)
	logger := discardLogger()
	if su.log != nil {
		logger = slog.New(slog.NewTextHandler(su.log, nil))
	}
	e.store, err = dualwrite.New(cfg, dualwrite.WithClock(e.clk), dualwrite.WithObserver(e.obs), dualwrite.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	e.obs.store = e.store
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.store.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		e.obs.check()
	})
	return e
}

// ctx is the context of the test's calls, marked so that tally can tell
// them from the Store's own calls.
func (e *env) ctx() context.Context { return context.WithValue(e.t.Context(), callerMark{}, true) }

type callerMark struct{}

// tally counts the errors the primary returns to calls made by the test
// (through the Store's caller path), as opposed to the Store's own calls
// (repair reads).
type tally struct {
	kv.Store
	eg   kv.ExpiryGetter
	mu   sync.Mutex
	errs int
}

func (t *tally) count(ctx context.Context, err error) error {
	if err != nil && !isNotFound(err) && ctx.Value(callerMark{}) != nil {
		t.mu.Lock()
		t.errs++
		t.mu.Unlock()
	}
	return err
}

func (t *tally) callerErrors() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.errs
}

func (t *tally) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := t.Store.Get(ctx, key)
	return v, t.count(ctx, err)
}

func (t *tally) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	e, err := t.eg.GetEntry(ctx, key)
	return e, t.count(ctx, err)
}

func (t *tally) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	return t.count(ctx, t.Store.Put(ctx, key, value, opts))
}

func (t *tally) Delete(ctx context.Context, key string) error {
	return t.count(ctx, t.Store.Delete(ctx, key))
}

func (e *env) put(key, value string, opts kv.PutOptions) {
	e.t.Helper()
	if err := e.store.Put(e.ctx(), key, []byte(value), opts); err != nil {
		e.t.Fatalf("Put(%q): %v", key, err)
	}
}

func (e *env) flush() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.store.Flush(ctx); err != nil {
		e.t.Fatalf("Flush: %v", err)
	}
}

// drive moves the fake clock by step whenever an asynchronous operation
// waits on it, until the lanes are empty. It cannot see whether a call that
// its last step woke has returned yet, so on a loaded machine it may step
// again first: a test that drives sets ShadowTimeout to far more steps than
// it needs (an hour for one-second steps, or never), or its copies can time
// out and open the breaker.
func (e *env) drive(step time.Duration) {
	e.t.Helper()
	waitFor(e.t, "the lanes to empty", func() bool {
		if e.store.Stats().Queued == 0 {
			return true
		}
		if e.primary.Stats().InFlight+e.shadow.Stats().InFlight > 0 {
			e.clk.Advance(step)
		}
		return false
	})
}

// repair runs repair passes until no dirty key is left. The Store's own
// loop may hold some keys' repairs (a breaker that closed kicks it), so the
// passes go on until the keys are repaired, not for a count of passes.
func (e *env) repair() {
	e.t.Helper()
	waitFor(e.t, "no dirty key", func() bool {
		e.store.RepairDirty()
		e.flush()
		return e.store.Stats().Dirty == 0
	})
}

// sameContents fails unless the two memory stores hold the same keys with
// the same values and expiries.
func sameContents(t *testing.T, a, b *memory.Store) {
	t.Helper()
	ea, eb := dump(t, a), dump(t, b)
	if len(ea) != len(eb) {
		t.Fatalf("stores differ: %d keys vs %d keys\nprimary: %v\nshadow:  %v", len(ea), len(eb), keysOf(ea), keysOf(eb))
	}
	for i := range ea {
		x, y := ea[i], eb[i]
		if x.Key != y.Key || !bytes.Equal(x.Value, y.Value) || !x.Expiration.Equal(y.Expiration) {
			t.Fatalf("stores differ at %q: %q exp %v vs %q %q exp %v", x.Key, x.Value, x.Expiration, y.Key, y.Value, y.Expiration)
		}
	}
}

func dump(t *testing.T, s *memory.Store) []kv.Entry {
	t.Helper()
	ctx := context.Background()
	var out []kv.Entry
	cursor := ""
	for {
		res, err := s.List(ctx, kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range res.Keys {
			e, err := s.GetEntry(ctx, k)
			if err != nil {
				t.Fatalf("GetEntry(%q): %v", k, err)
			}
			out = append(out, e)
		}
		if res.Done {
			return out
		}
		cursor = res.Cursor
	}
}

func keysOf(es []kv.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

// waitFor polls cond until it holds: a goroutine reaching a state, never
// time passing. The bound only stops a broken test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// valueOf is key's value in s, "<none>" when s holds none.
func valueOf(t testing.TB, s kv.Store, key string) string {
	t.Helper()
	v, err := s.Get(context.Background(), key)
	if isNotFound(err) {
		return "<none>"
	}
	must(t, err)
	return string(v)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s = %v, want %v", what, err, target)
	}
}

func key(i int) string { return fmt.Sprintf("wordle:k%03d", i) }

func isNotFound(err error) bool { return errors.Is(err, kv.ErrNotFound) }

func goroutines() int { return runtime.NumGoroutine() }

// stepTo moves s one stage at a time to to, as the stage machine allows,
// and returns the first refusal.
func stepTo(ctx context.Context, s *dualwrite.Store, to dualwrite.Stage) error {
	for s.Stage() != to {
		next := s.Stage() + 1
		if to < s.Stage() {
			next = s.Stage() - 1
		}
		if err := s.SetStage(ctx, next); err != nil {
			return err
		}
	}
	return nil
}
