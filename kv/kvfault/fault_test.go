package kvfault_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/internal/forward"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newFault(t *testing.T, clk *clock.Fake, cfg kvfault.Config) *kvfault.Store {
	t.Helper()
	cfg.Clock = clk
	s, err := kvfault.New(memory.New(memory.Config{Clock: clk}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// With every knob at zero the wrapper is transparent: it keeps the whole
// contract.
func TestConformance(t *testing.T) {
	clk := clock.NewFake(start)
	kvtest.Run(t, kvtest.Harness{
		New:       func(t *testing.T) kv.Store { return newFault(t, clk, kvfault.Config{}) },
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
}

// Exact keeps the contract too, metadata included: the wrapped store keeps
// it, so Exact's store is a kv.MetadataStore and *Store is not.
func TestConformanceExact(t *testing.T) {
	clk := clock.NewFake(start)
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			s := newFault(t, clk, kvfault.Config{}).Exact()
			if _, ok := s.(kv.MetadataStore); !ok {
				t.Fatal("Exact over a store that keeps metadata is not a kv.MetadataStore")
			}
			return s
		},
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
}

// Exact has no ability the wrapped store lacks, and its faults are the
// wrapper's: a write with metadata through it fails in an outage.
func TestExactAbilities(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(start)
	for set := range forward.BulkDelete << 1 {
		if set&forward.Entry != 0 && set&forward.Metadata != 0 {
			continue // metadata carries the entry read
		}
		inner := forward.Restrict(memory.New(memory.Config{Clock: clk}), set)
		f, err := kvfault.New(inner, kvfault.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if got := forward.Of(f.Exact()); got != set {
			t.Errorf("Exact over a store with abilities %05b has %05b", set, got)
		}
	}
	var s any = newFault(t, clk, kvfault.Config{})
	if _, ok := s.(kv.MetadataStore); ok {
		t.Error("*kvfault.Store claims to keep metadata")
	}
	f := newFault(t, clk, kvfault.Config{})
	ms := f.Exact().(kv.MetadataStore)
	e := kv.Entry{Key: "k", Value: []byte("v"), Metadata: []byte(`{"a":1}`)}
	if err := ms.PutEntry(ctx, e); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Inner().(kv.ExpiryGetter).GetEntry(ctx, "k"); err != nil || string(got.Metadata) != `{"a":1}` {
		t.Fatalf("the wrapped store holds %s, %v", got.Metadata, err)
	}
	f.SetOutage(true)
	if err := ms.PutEntry(ctx, e); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("PutEntry in an outage = %v, want kv.ErrUnavailable", err)
	}
	if st := f.Stats(); st.Writes != 2 || st.Outages != 1 {
		t.Errorf("stats = %+v, want 2 writes and 1 outage", st)
	}
}

func TestConfigValidation(t *testing.T) {
	inner := memory.New(memory.Config{})
	for name, cfg := range map[string]kvfault.Config{
		"negative latency": {Latency: -1},
		"negative jitter":  {Jitter: -1},
		"error rate > 1":   {ErrorRate: 1.5},
		"stale rate < 0":   {StaleRate: -0.1},
	} {
		if _, err := kvfault.New(inner, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := kvfault.New(nil, kvfault.Config{}); err == nil {
		t.Error("nil store accepted")
	}
}

// Latency on a fake clock holds a call until the test moves time, and a
// cancelled context ends the wait.
func TestLatencyOnFakeClock(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{Latency: time.Second})
	done := make(chan error, 1)
	go func() { done <- s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{}) }()
	waitFor(t, "the call to wait on its timer", func() bool { return clk.Timers() == 1 })
	select {
	case err := <-done:
		t.Fatalf("Put returned %v before the clock moved", err)
	default:
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, err := s.Get(ctx, "k"); done <- err }()
	waitFor(t, "the call to wait on its timer", func() bool { return s.Stats().InFlight == 1 && clk.Timers() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v, want context.Canceled", err)
	}
}

// gatedClock holds each NewTimer until the test lets it through.
type gatedClock struct {
	*clock.Fake
	entered, release chan struct{}
}

func (g gatedClock) NewTimer(d time.Duration) clock.Timer {
	g.entered <- struct{}{}
	<-g.release
	return g.Fake.NewTimer(d)
}

// A call counts as in flight only once its latency timer is set: a test that
// waits for InFlight and then advances the clock must not advance it before
// the timer exists, or the call waits forever.
func TestInFlightCountsOnceTheTimerIsSet(t *testing.T) {
	clk := gatedClock{Fake: clock.NewFake(start), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := kvfault.New(memory.New(memory.Config{Clock: clk.Fake}), kvfault.Config{Clock: clk, Latency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{}) }()
	<-clk.entered
	if n := s.Stats().InFlight; n != 0 {
		t.Fatalf("InFlight = %d while the call's timer is being set, want 0", n)
	}
	close(clk.release)
	waitFor(t, "the call to be in flight", func() bool { return s.Stats().InFlight == 1 })
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().InFlight; n != 0 {
		t.Fatalf("InFlight = %d after the call, want 0", n)
	}
}

// Reply latency holds the answer after the wrapped store has acted: the
// write is visible to others before the caller returns.
func TestReplyLatency(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{ReplyLatency: time.Second})
	done := make(chan error, 1)
	go func() { done <- s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{}) }()
	waitFor(t, "the answer to wait on its timer", func() bool { return clk.Timers() == 1 })
	if v, err := s.Inner().Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("the wrapped store has %q, %v before the answer", v, err)
	}
	select {
	case err := <-done:
		t.Fatalf("Put returned %v before the clock moved", err)
	default:
	}
	clk.Advance(time.Second)
	must(t, <-done)
	if _, err := kvfault.New(s, kvfault.Config{ReplyJitter: -1}); err == nil {
		t.Fatal("negative reply jitter accepted")
	}
}

// The same seed gives the same failures to a single caller.
func TestErrorRateIsSeeded(t *testing.T) {
	pattern := func(seed uint64) string {
		clk := clock.NewFake(start)
		s := newFault(t, clk, kvfault.Config{Seed: seed, ErrorRate: 0.5})
		out := make([]byte, 64)
		for i := range out {
			err := s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{})
			switch {
			case err == nil:
				out[i] = '.'
			case errors.Is(err, kv.ErrUnavailable) && errors.Is(err, kvfault.ErrInjected):
				out[i] = 'x'
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		return string(out)
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	if a != b {
		t.Fatalf("same seed, different failures:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("different seeds, same failures: %s", a)
	}
	fails := 0
	for _, ch := range a {
		if ch == 'x' {
			fails++
		}
	}
	if fails == 0 || fails == len(a) {
		t.Fatalf("error rate 0.5 gave %d failures in %d calls", fails, len(a))
	}
}

// An outage refuses every call at once with a retry hint, without reaching
// the wrapped store, until it is turned off.
func TestOutage(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{Latency: time.Hour})
	s.SetOutage(true)
	err := s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{})
	if _, ok := kv.RetryAfter(err); !ok || !errors.Is(err, kvfault.ErrOutage) {
		t.Fatalf("Put during outage = %v, want an unavailable error", err)
	}
	if _, err := s.Inner().Get(context.Background(), "k"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the write reached the wrapped store: %v", err)
	}
	s.SetOutage(false)
	s.SetLatency(0, 0)
	if err := s.Put(context.Background(), "k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Outages != 1 || st.Writes != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Stale reads return the value before the key's last write (missing if it
// had none), then fresh ones when the knob is off.
func TestStaleReads(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{})
	ctx := context.Background()
	must(t, s.Put(ctx, "new", []byte("v1"), kv.PutOptions{}))
	must(t, s.Put(ctx, "k", []byte("v1"), kv.PutOptions{TTL: time.Hour}))
	must(t, s.Put(ctx, "k", []byte("v2"), kv.PutOptions{}))
	must(t, s.Put(ctx, "gone", []byte("v1"), kv.PutOptions{}))
	must(t, s.Delete(ctx, "gone"))
	s.SetStaleRate(1)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v1" {
		t.Fatalf("stale Get(k) = %q, %v; want v1", v, err)
	}
	if e, err := s.GetEntry(ctx, "k"); err != nil || !e.Expiration.Equal(start.Add(time.Hour)) {
		t.Fatalf("stale GetEntry(k) = %+v, %v; want the old expiry", e, err)
	}
	if _, err := s.Get(ctx, "new"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("stale Get(new) = %v, want not found (it had no value before)", err)
	}
	if v, err := s.Get(ctx, "gone"); err != nil || string(v) != "v1" {
		t.Fatalf("stale Get(gone) = %q, %v; want the value before the delete", v, err)
	}
	got, err := s.GetMany(ctx, []string{"k", "new", "gone"})
	if err != nil || len(got) != 2 {
		t.Fatalf("stale GetMany = %v, %v; want k and gone", got, err)
	}
	clk.Advance(2 * time.Hour) // the old version of k has expired
	if _, err := s.Get(ctx, "k"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("stale Get(k) after the old expiry = %v, want not found", err)
	}
	s.SetStaleRate(0)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v2" {
		t.Fatalf("fresh Get(k) = %q, %v", v, err)
	}
}

// With a StaleWindow, stale reads come only within it of the key's last
// write: past it every read is fresh, as Workers KV's are a minute after.
func TestStaleReadsWithinTheirWindow(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{StaleRate: 1, StaleWindow: time.Minute})
	ctx := context.Background()
	must(t, s.Put(ctx, "k", []byte("v1"), kv.PutOptions{}))
	must(t, s.Put(ctx, "k", []byte("v2"), kv.PutOptions{}))
	clk.Advance(59 * time.Second)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v1" {
		t.Fatalf("Get inside the window = %q, %v; want the stale v1", v, err)
	}
	clk.Advance(time.Second)
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v2" {
		t.Fatalf("Get a window after the write = %q, %v; want v2", v, err)
	}
	if got, err := s.GetMany(ctx, []string{"k"}); err != nil || len(got) != 1 || string(got[0].Value) != "v2" {
		t.Fatalf("GetMany a window after the write = %v, %v; want v2", got, err)
	}
	must(t, s.Put(ctx, "k", []byte("v3"), kv.PutOptions{}))
	if v, err := s.Get(ctx, "k"); err != nil || string(v) != "v2" {
		t.Fatalf("Get just after a new write = %q, %v; want the stale v2", v, err)
	}
}

// Knobs turn while calls run on many goroutines (run with -race).
func TestKnobsUnderConcurrency(t *testing.T) {
	clk := clock.NewFake(start)
	s := newFault(t, clk, kvfault.Config{Seed: 1})
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("k%d", (w+i)%8)
				_ = s.Put(ctx, k, []byte("v"), kv.PutOptions{})
				_, _ = s.Get(ctx, k)
				_ = s.Delete(ctx, k)
			}
		})
	}
	for i := 0; i < 200 || s.Stats().Reads < 500; i++ {
		s.SetErrorRate(float64(i%3) / 2)
		s.SetOutage(i%7 == 0)
		s.SetStaleRate(float64(i%2) / 2)
		s.SetLatency(0, time.Duration(i%2))
	}
	close(stop)
	wg.Wait()
	if st := s.Stats(); st.InFlight != 0 || st.Reads == 0 {
		t.Fatalf("stats %+v", st)
	}
}

type plainStore struct{ kv.Store }

func TestMissingAbilities(t *testing.T) {
	s, err := kvfault.New(plainStore{memory.New(memory.Config{})}, kvfault.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err1 := s.GetEntry(ctx, "k")
	_, err2 := s.GetMany(ctx, []string{"k"})
	err3 := s.PutMany(ctx, nil)
	err4 := s.DeleteMany(ctx, nil)
	for i, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("call %d = %v, want errors.ErrUnsupported", i, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds: goroutines reach states, time does not
// pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Microsecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}
