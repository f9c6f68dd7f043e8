package dualwrite_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
)

// panicky is a memory store whose calls panic while armed, with a value
// that quotes the key: a log that printed panic values would leak it.
type panicky struct {
	*memory.Store
	armed atomic.Bool
}

func (p *panicky) check(key string) {
	if p.armed.Load() {
		panic("store bug near secret-" + key)
	}
}

func (p *panicky) Get(ctx context.Context, key string) ([]byte, error) {
	p.check(key)
	return p.Store.Get(ctx, key)
}

func (p *panicky) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	p.check(key)
	return p.Store.GetEntry(ctx, key)
}

func (p *panicky) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	p.check(key)
	return p.Store.Put(ctx, key, value, opts)
}

func (p *panicky) Delete(ctx context.Context, key string) error {
	p.check(key)
	return p.Store.Delete(ctx, key)
}

func (p *panicky) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	p.check(opts.Prefix)
	return p.Store.List(ctx, opts)
}

type panicEnv struct {
	primary, shadow *panicky
	store           *dualwrite.Store
	log             *syncbuf.Buffer
	clk             *clock.Fake
}

func newPanicEnv(t *testing.T, cfg dualwrite.Config) *panicEnv {
	t.Helper()
	clk := clock.NewFake(start)
	e := &panicEnv{
		primary: &panicky{Store: memory.New(memory.Config{Clock: clk})},
		shadow:  &panicky{Store: memory.New(memory.Config{Clock: clk})},
		log:     &syncbuf.Buffer{}, clk: clk,
	}
	cfg.Primary, cfg.Shadow = e.primary, e.shadow
	cfg.ConsistencyWindow = -1
	cfg.RepairInterval = never
	var err error
	e.store, err = dualwrite.New(cfg, dualwrite.WithClock(clk), dualwrite.WithLogger(slog.New(slog.NewTextHandler(e.log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.store.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

func (e *panicEnv) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, e.store.Flush(ctx))
}

// TestPrimaryPanicIsAnError: a panic of the authoritative store reaches the
// caller as an error, leaves no lock held (the key can be written again,
// the stage changed, the store closed), and marks the key dirty since the
// write may have landed.
func TestPrimaryPanicIsAnError(t *testing.T) {
	e := newPanicEnv(t, dualwrite.Config{Stage: dualwrite.Shadow})
	ctx := t.Context()
	e.primary.armed.Store(true)
	for name, call := range map[string]func() error{
		"Put":    func() error { return e.store.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{}) },
		"Delete": func() error { return e.store.Delete(ctx, "wordle:k") },
		"Get":    func() error { _, err := e.store.Get(ctx, "wordle:k"); return err },
		"List":   func() error { _, err := e.store.List(ctx, kv.ListOptions{Prefix: "wordle:"}); return err },
	} {
		err := call()
		var pe *dualwrite.PanicError
		if !errors.Is(err, kv.ErrPanicked) || !errors.As(err, &pe) || pe.Role != dualwrite.RolePrimary || len(pe.Stack) == 0 {
			t.Fatalf("%s = %v, want a *PanicError of the primary matching kv.ErrPanicked", name, err)
		}
		if got := compare.ErrorClass(err); got != "panic" {
			t.Errorf("%s: error class %q", name, got)
		}
	}
	if st := e.store.Stats(); st.Dirty != 1 {
		t.Errorf("dirty keys = %d, want the key whose writes panicked", st.Dirty)
	}

	e.primary.armed.Store(false)
	done := make(chan error, 1)
	go func() { done <- e.store.Put(ctx, "wordle:k", []byte("v2"), kv.PutOptions{}) }()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a write of the key blocks: the panic left its lock held")
	}
	stageCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	must(t, e.store.SetStage(stageCtx, dualwrite.DualWrite))

	log := e.log.String()
	if strings.Count(log, "a store panicked") != 1 || !strings.Contains(log, "role=primary") ||
		!strings.Contains(log, "panic_type=string") || !strings.Contains(log, "panic_test.go") {
		t.Errorf("want one line with the role, the panic's type and its stack:\n%s", log)
	}
	if strings.Contains(log, "secret-") {
		t.Errorf("the log quotes the panic value:\n%s", log)
	}
}

// TestShadowPanicIsContained: a panic of the other store in a lane's
// goroutine does not end the process nor the lane; the copy counts as
// failed, its key is dirty, and repair copies it once the store behaves.
func TestShadowPanicIsContained(t *testing.T) {
	e := newPanicEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100}})
	ctx := t.Context()
	e.shadow.armed.Store(true)
	must(t, e.store.Put(ctx, "wordle:a", []byte("1"), kv.PutOptions{}))
	e.flush(t)
	st := e.store.Stats()
	if st.Drops[dualwrite.DropShadowError] != 1 || st.Dirty != 1 {
		t.Fatalf("after a panicking copy: drops %v, dirty %d", st.Drops, st.Dirty)
	}

	e.shadow.armed.Store(false)
	must(t, e.store.Put(ctx, "wordle:b", []byte("2"), kv.PutOptions{}))
	e.flush(t)
	if v, err := e.shadow.Store.Get(ctx, "wordle:b"); err != nil || string(v) != "2" {
		t.Fatalf("the lanes stopped copying after the panic: %q, %v", v, err)
	}
	for range 2 { // the difference is held, then copied
		e.clk.Advance(time.Second)
		e.store.RepairDirty()
		e.flush(t)
	}
	if v, err := e.shadow.Store.Get(ctx, "wordle:a"); err != nil || string(v) != "1" || e.store.Stats().Dirty != 0 {
		t.Fatalf("repair after the panic: %q, %v, %+v", v, err, e.store.Stats())
	}
	if log := e.log.String(); !strings.Contains(log, "role=shadow") || strings.Contains(log, "secret-") {
		t.Errorf("log:\n%s", log)
	}
}

// panickingSink is a divergence sink with a bug.
type panickingSink struct{ calls atomic.Int64 }

func (s *panickingSink) Divergence(context.Context, compare.Record) {
	s.calls.Add(1)
	panic("sink bug")
}

// TestComparisonPanicsAreContained: a comparison read that panics counts as
// the store's error, and a sink that panics loses its record, not the lane.
func TestComparisonPanicsAreContained(t *testing.T) {
	sink := &panickingSink{}
	e := newPanicEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, Sink: sink,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100}})
	ctx := t.Context()
	must(t, e.store.Put(ctx, "wordle:a", []byte("1"), kv.PutOptions{}))
	e.flush(t)

	e.shadow.armed.Store(true)
	if _, err := e.store.Get(ctx, "wordle:a"); err != nil {
		t.Fatal(err)
	}
	e.flush(t)
	e.shadow.armed.Store(false)
	if n := e.store.Stats().Comparisons[compare.ShadowError]; n != 1 {
		t.Fatalf("shadow_error comparisons = %d, want the panicking read: %+v", n, e.store.Stats().Comparisons)
	}

	// Two divergences for the sink, each suspected by a comparison and
	// confirmed by a verification.
	for _, k := range []string{"wordle:a", "wordle:b"} {
		must(t, e.store.Put(ctx, k, []byte("1"), kv.PutOptions{}))
		e.flush(t)
		must(t, e.shadow.Store.Put(ctx, k, []byte("other"), kv.PutOptions{}))
		if _, err := e.store.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
		e.flush(t)
	}
	if _, err := e.store.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sink.calls.Load(); n != 2 {
		t.Fatalf("sink called %d times, want 2: a panicking sink must not stop verification", n)
	}
	if st := e.store.Stats(); st.Comparisons[compare.Suspected] != 2 || st.Verifications[compare.ValueMismatch] != 2 {
		t.Errorf("comparisons %+v, verifications %+v", st.Comparisons, st.Verifications)
	}
	if log := e.log.String(); strings.Count(log, "divergence sink panicked") != 1 {
		t.Errorf("want the sink's panic logged once:\n%s", log)
	}
}

// A primary that panics when the stage key is read back (the repair loop's
// goroutine, and a flip's) does not end the process: the read counts as
// unreadable, and the flip from Handover waits for a read that works.
func TestAStageKeyReadThatPanicsHoldsTheFlip(t *testing.T) {
	e := newPanicEnv(t, dualwrite.Config{Stage: dualwrite.Handover, FenceInterval: time.Second})
	e.primary.armed.Store(true)
	err := e.store.SetStage(t.Context(), dualwrite.Live)
	if k := e.store.Stats().StageKey; !errors.Is(err, dualwrite.ErrUnsynced) || k.Found != dualwrite.KeyUnreadable || !strings.Contains(err.Error(), dualwrite.StageKey+" cannot be read back") {
		t.Fatalf("the flip with the stage key's read panicking: %v, stage key %+v", err, k)
	}
}
