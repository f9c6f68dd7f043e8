package dualwrite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// countingStore is a memory store that notes the clock's time of every
// request it serves, and can fail its writes.
type countingStore struct {
	*memory.Store
	clk  clock.Clock
	mu   sync.Mutex
	at   []time.Time
	fail bool
}

var errDown = errors.New("the shadow is down")

func (c *countingStore) note(write bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, c.clk.Now())
	if write && c.fail {
		return errDown
	}
	return nil
}

func (c *countingStore) Get(ctx context.Context, k string) ([]byte, error) {
	_ = c.note(false)
	return c.Store.Get(ctx, k)
}
func (c *countingStore) GetEntry(ctx context.Context, k string) (kv.Entry, error) {
	_ = c.note(false)
	return c.Store.GetEntry(ctx, k)
}
func (c *countingStore) GetValue(ctx context.Context, k string) (kv.Entry, error) {
	_ = c.note(false)
	return c.Store.GetValue(ctx, k)
}
func (c *countingStore) GetMetadata(ctx context.Context, k string) (json.RawMessage, error) {
	_ = c.note(false)
	return c.Store.GetMetadata(ctx, k)
}
func (c *countingStore) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	_ = c.note(false)
	return c.Store.GetMany(ctx, keys)
}
func (c *countingStore) Put(ctx context.Context, k string, v []byte, o kv.PutOptions) error {
	if err := c.note(true); err != nil {
		return err
	}
	return c.Store.Put(ctx, k, v, o)
}
func (c *countingStore) PutEntry(ctx context.Context, e kv.Entry) error {
	if err := c.note(true); err != nil {
		return err
	}
	return c.Store.PutEntry(ctx, e)
}
func (c *countingStore) Delete(ctx context.Context, k string) error {
	if err := c.note(true); err != nil {
		return err
	}
	return c.Store.Delete(ctx, k)
}

// underBudget fails the test unless the requests the shadow took since
// from (a count and a time) fit a budget of rate a second: rate for each
// second begun since then, and rate more for the window open before it.
// The fake clock moves while a worker goes from its booking to the store,
// so a request may be seen a step late: two are allowed for it.
func underBudget(t *testing.T, what string, c *countingStore, clk clock.Clock, rate int, from since) {
	t.Helper()
	n := c.requests() - from.requests
	seconds := int((clk.Now().Sub(from.at) + time.Second - 1) / time.Second)
	if limit := rate*(seconds+1) + 2; n > limit {
		t.Fatalf("%s: the shadow took %d requests in %d s of the clock: over a budget of %d a second (at most %d)", what, n, seconds, rate, limit)
	}
}

// since is where underBudget counts from: the shadow's requests then, and
// the time.
type since struct {
	requests int
	at       time.Time
}

// span is the time from the first request to the last.
func (c *countingStore) span() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.at) == 0 {
		return 0
	}
	lo, hi := c.at[0], c.at[0]
	for _, t := range c.at {
		lo, hi = minTime(lo, t), maxTime(hi, t)
	}
	return hi.Sub(lo)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (c *countingStore) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

// paced is a dual-write store over a memory primary and a counting shadow
// whose budget is rate requests a second, on a fake clock.
func paced(t *testing.T, rate int, cfg dualwrite.Config) (*dualwrite.Store, *memory.Store, *countingStore, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(start)
	primary := memory.New(memory.Config{Clock: clk})
	shadow := &countingStore{Store: memory.New(memory.Config{Clock: clk}), clk: clk}
	cfg.Primary, cfg.Shadow = primary, shadow
	cfg.ShadowBudget = budget.New(budget.Budget{Requests: rate, Per: time.Second}, clk)
	cfg.FenceInterval, cfg.RepairInterval = -1, never
	st, err := dualwrite.New(cfg, dualwrite.WithClock(clk), dualwrite.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go func() { // the lanes may wait for the budget while they drain
			for ctx.Err() == nil {
				clk.Advance(100 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
		}()
		_ = st.Close(ctx)
		cancel()
	})
	return st, primary, shadow, clk
}

// drain moves the clock on by steps until the lanes are empty.
func drain(t *testing.T, st *dualwrite.Store, clk *clock.Fake) {
	t.Helper()
	waitFor(t, "the lanes to empty", func() bool {
		if st.Stats().Queued == 0 {
			return true
		}
		clk.Advance(50 * time.Millisecond)
		return false
	})
}

// M0 sustains about 100 operations a second: with a budget toward the
// shadow, a burst of 50 writes reaches it at the budget's rate (10 a
// second here, on the injected clock), every copy delayed rather than
// dropped; the dirty keys of an outage are then repaired under the same
// rate, the repairs without room deferred to later passes, all counted.
func TestTheShadowBudgetPacesCopiesAndRepairs(t *testing.T) {
	st, primary, shadow, clk := paced(t, 10, dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: time.Second,
		ShadowTimeout: time.Hour, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1000}})
	ctx := context.Background()
	t0 := clk.Now()
	for i := range 50 {
		must(t, st.Put(ctx, key(i), []byte("v"), kv.PutOptions{}))
	}
	drain(t, st, clk)
	s := st.Stats()
	if shadow.Len() != 50 || s.Drops[dualwrite.DropTimeout]+s.Drops[dualwrite.DropLaneFull] != 0 {
		t.Fatalf("the shadow holds %d of 50 keys, drops %v", shadow.Len(), s.Drops)
	}
	if s.ShadowPacing.Delayed == 0 || s.ShadowPacing.Waited == 0 {
		t.Fatalf("pacing %+v: want copies delayed", s.ShadowPacing)
	}
	underBudget(t, "the burst", shadow, clk, 10, since{0, t0})
	if span := shadow.span(); span < 4*time.Second-100*time.Millisecond {
		t.Fatalf("50 copies reached the shadow within %s: at 10 a second they take 4 s", span)
	}

	// An outage leaves 30 keys dirty; their repairs come back under the budget.
	shadow.mu.Lock()
	shadow.fail = true
	shadow.mu.Unlock()
	for i := range 30 {
		must(t, st.Put(ctx, key(100+i), []byte("v"), kv.PutOptions{}))
	}
	drain(t, st, clk)
	shadow.mu.Lock()
	shadow.fail = false
	shadow.mu.Unlock()
	if d := st.Stats().Dirty; d != 30 {
		t.Fatalf("%d dirty keys after the outage, want 30", d)
	}
	n0, t1 := shadow.requests(), clk.Now()
	waitFor(t, "every dirty key repaired", func() bool {
		clk.Advance(200 * time.Millisecond)
		st.RepairDirty()
		drain(t, st, clk)
		return st.Stats().Dirty == 0
	})
	if n := primary.Len(); n != 80 || shadow.Len() != 80 {
		t.Fatalf("primary %d, shadow %d keys; want 80 each", n, shadow.Len())
	}
	underBudget(t, "the repairs", shadow, clk, 10, since{n0, t1})
	if s := st.Stats(); s.ShadowPacing.Deferred == 0 || s.Repairs[dualwrite.RepairDeferred] == 0 {
		t.Fatalf("pacing %+v, repairs %v: want repairs deferred for the budget", s.ShadowPacing, s.Repairs)
	}
	if shadow.requests() < 50+30+2*30 {
		t.Fatalf("only %d requests reached the shadow", shadow.requests())
	}
}

// A copy that would wait for the budget past its life (the window less
// the copy's timeout) is not dropped silently: it is dropped as timed out
// and its key is dirty, for repair, as a slow shadow's would be.
func TestACopyThatCannotWaitForTheBudgetIsDirty(t *testing.T) {
	st, _, shadow, clk := paced(t, 1, dualwrite.Config{Stage: dualwrite.DualWrite, ConsistencyWindow: 10 * time.Second,
		ShadowTimeout: 5 * time.Second, Lanes: 1})
	ctx := context.Background()
	for i := range 20 {
		must(t, st.Put(ctx, fmt.Sprintf("wordle:late%02d", i), []byte("v"), kv.PutOptions{}))
	}
	drain(t, st, clk)
	s := st.Stats()
	if s.Drops[dualwrite.DropTimeout] == 0 || s.ShadowPacing.Delayed == 0 {
		t.Fatalf("drops %v, pacing %+v: want copies dropped for waiting too long", s.Drops, s.ShadowPacing)
	}
	if got := shadow.Len() + s.Dirty; got != 20 || uint64(s.Dirty) != s.Drops[dualwrite.DropTimeout] {
		t.Fatalf("%d keys copied, %d dirty, %d dropped: every write copied or dirty", shadow.Len(), s.Dirty, s.Drops[dualwrite.DropTimeout])
	}
}
