package dualwrite_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// In every fault of the shadow the caller sees the primary's errors and no
// other; the breaker opens and closes as configured; after recovery and
// repair the stores are identical.
func TestFaultMatrix(t *testing.T) {
	const openFor = 10 * time.Second
	for _, c := range []struct {
		name string
		// fault sets the shadow's fault before write i; it runs on the
		// test's goroutine.
		fault    func(e *env, i int)
		opens    bool // the breaker must open
		realTime bool
	}{
		{name: "down", opens: true, fault: func(e *env, i int) { e.shadow.SetOutage(true) }},
		{name: "slow", realTime: true, fault: func(e *env, i int) {
			e.primary.SetLatency(100*time.Microsecond, 0)
			e.shadow.SetLatency(time.Millisecond, 0)
		}},
		{name: "erroring 50%", fault: func(e *env, i int) { e.shadow.SetErrorRate(0.5) }},
		{name: "flapping", opens: true, fault: func(e *env, i int) {
			down := i/25%2 == 0
			e.shadow.SetOutage(down)
			if !down && i%25 == 0 {
				e.clk.Advance(openFor) // the breaker may probe again
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []envOption
			if c.realTime {
				opts = append(opts, realLatency)
			}
			e := newEnv(t, dualwrite.Config{
				Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1,
				Lanes: 4, LaneDepth: 64, ShadowTimeout: time.Hour,
				Breaker: dualwrite.BreakerConfig{FailuresToOpen: 3, OpenTimeout: openFor},
			}, opts...)
			e.primary.SetErrorRate(0.1)
			var callerErrs int
			for i := range 200 {
				c.fault(e, i)
				k := key(i % 40)
				var err error
				switch i % 4 {
				case 0, 1:
					err = e.store.Put(e.ctx(), k, fmt.Appendf(nil, "v%d", i), kv.PutOptions{})
				case 2:
					err = e.store.Put(e.ctx(), k, []byte("ttl"), kv.PutOptions{TTL: time.Hour})
				case 3:
					_, err = e.store.Get(e.ctx(), k)
					if isNotFound(err) {
						err = nil
					}
				}
				if err != nil {
					if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "primary") {
						t.Fatalf("caller got a non-primary error: %v", err)
					}
					callerErrs++
				}
				if i%10 == 9 {
					e.flush() // let the breaker see the failures in order
				}
			}
			if want := e.tally.callerErrors(); callerErrs != want || want == 0 {
				t.Fatalf("caller saw %d errors, the primary returned %d to its calls", callerErrs, want)
			}
			if c.opens { // breaker events reach the observer from their own goroutine
				waitFor(t, "the breaker's events", func() bool {
					return strings.Contains(e.obs.breakerTrail(dualwrite.RoleShadow), "open")
				})
			}
			trail := e.obs.breakerTrail(dualwrite.RoleShadow)
			if c.opens != strings.Contains(trail, "open") && c.name != "erroring 50%" {
				t.Fatalf("breaker trail %q, want opened=%v", trail, c.opens)
			}

			// Recovery: the shadow heals, the open period passes, a write
			// probes and closes the breaker, repair copies the dirty keys.
			e.shadow.SetOutage(false)
			e.shadow.SetErrorRate(0)
			e.primary.SetErrorRate(0)
			e.clk.Advance(openFor)
			e.put("wordle:probe", "p", kv.PutOptions{})
			e.flush()
			if st := e.store.Stats(); st.Breaker != dualwrite.BreakerClosed {
				t.Fatalf("breaker %s after recovery, trail %q", st.Breaker, e.obs.breakerTrail(dualwrite.RoleShadow))
			}
			e.repair()
			sameContents(t, e.pmem, e.smem)
			if st := e.store.Stats(); st.Divergences() != 0 {
				t.Fatalf("divergences reported: %v", st.Comparisons)
			}
			t.Logf("breaker trail %q, drops %v", trail, e.store.Stats().Drops)
		})
	}
}

// The breaker opens after FailuresToOpen consecutive failures, refuses
// operations for OpenTimeout on the Store's clock, lets HalfOpenRequests
// probes through, and closes after that many successes, which starts a
// repair.
func TestBreakerOpensAndCloses(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 3, OpenTimeout: 10 * time.Second, HalfOpenRequests: 2},
	})
	e.shadow.SetOutage(true)
	for i := range 3 {
		if st := e.store.Stats(); st.Breaker != dualwrite.BreakerClosed {
			t.Fatalf("breaker %s after %d failures", st.Breaker, i)
		}
		e.put(key(i), "v", kv.PutOptions{})
		e.flush()
	}
	waitFor(t, "the open event", func() bool { return e.obs.breakerTrail(dualwrite.RoleShadow) == "open " })
	if st := e.store.Stats(); st.Breaker != dualwrite.BreakerOpen {
		t.Fatalf("breaker %s after 3 failures", st.Breaker)
	}
	calls := e.shadow.Stats().Outages
	e.put(key(3), "v", kv.PutOptions{})
	e.flush()
	if st := e.store.Stats(); st.Drops[dualwrite.DropBreakerOpen] != 1 || e.shadow.Stats().Outages != calls {
		t.Fatalf("a write while open: drops %v, shadow calls %d -> %d", st.Drops, calls, e.shadow.Stats().Outages)
	}
	e.clk.Advance(9 * time.Second)
	if st := e.store.Stats(); st.Breaker != dualwrite.BreakerOpen {
		t.Fatalf("breaker %s before OpenTimeout", st.Breaker)
	}
	e.clk.Advance(time.Second)
	if st := e.store.Stats(); st.Breaker != dualwrite.BreakerHalfOpen {
		t.Fatalf("breaker %s after OpenTimeout", st.Breaker)
	}
	// A failed probe opens it again.
	e.put(key(4), "v", kv.PutOptions{})
	e.flush()
	if st := e.store.Stats(); st.Breaker != dualwrite.BreakerOpen {
		t.Fatalf("breaker %s after a failed probe", st.Breaker)
	}
	e.clk.Advance(10 * time.Second)
	e.shadow.SetOutage(false)
	for i := 5; i < 7; i++ {
		e.put(key(i), "v", kv.PutOptions{})
		e.flush()
	}
	waitFor(t, "the breaker to close", func() bool {
		return e.obs.breakerTrail(dualwrite.RoleShadow) == "open half-open open half-open closed "
	})
	// Closing started a repair pass over the five dirty keys, which holds
	// their differences; the next pass copies them.
	waitFor(t, "the repair started by the close", func() bool { return e.store.Stats().Repairs[dualwrite.RepairDeferred] >= 5 })
	e.repair()
	sameContents(t, e.pmem, e.smem)
	if st := e.store.Stats(); st.Repairs[dualwrite.RepairCopied] != 5 {
		t.Fatalf("repairs %v, want 5 copied", st.Repairs)
	}
}

// A shadow operation that outlives ShadowTimeout on the Store's clock is cut
// off, counted as a timeout, leaves its key dirty, and counts as a failure
// for the breaker.
func TestShadowTimeout(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, ShadowTimeout: time.Second,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1},
	})
	e.shadow.SetLatency(time.Hour, 0)
	e.put("wordle:k", "v", kv.PutOptions{})
	waitFor(t, "the copy and the watchdog to wait", func() bool { return e.shadow.Stats().InFlight == 1 && e.clk.Timers() >= 3 })
	e.clk.Advance(time.Second)
	e.flush()
	st := e.store.Stats()
	if st.Drops[dualwrite.DropTimeout] != 1 || st.Dirty != 1 || st.Breaker != dualwrite.BreakerOpen {
		t.Fatalf("after a timeout: drops %v, dirty %d, breaker %s", st.Drops, st.Dirty, st.Breaker)
	}
	if e.obs.ops[dualwrite.OpPut][dualwrite.OutcomeTimeout] != 1 {
		t.Fatalf("observer saw %v", e.obs.ops)
	}
}

// The caller's cancellation never reaches the copy nor the breaker, and an
// input the shadow refuses (its rules differ) leaves the key dirty without
// counting against the shadow's health.
func TestBreakerIgnoresCallersAndInputErrors(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, ShadowTimeout: never, // see drive
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1},
	})
	e.shadow.SetLatency(time.Second, 0)
	for i := range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		must(t, e.store.Put(ctx, key(i), []byte("v"), kv.PutOptions{}))
		cancel()
	}
	e.drive(time.Second)
	if trail := e.obs.breakerTrail(dualwrite.RoleShadow); trail != "" {
		t.Fatalf("cancelled callers moved the breaker: %q", trail)
	}
	sameContents(t, e.pmem, e.smem)

	strict := &refusing{Store: e.smem}
	s, err := dualwrite.New(dualwrite.Config{Primary: e.pmem, Shadow: strict, Stage: dualwrite.DualWrite,
		Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1}}, dualwrite.WithClock(e.clk), dualwrite.WithLogger(discardLogger()))
	must(t, err)
	defer s.Close(context.Background())
	for i := range 3 {
		must(t, s.Put(context.Background(), key(i), []byte("v"), kv.PutOptions{}))
	}
	must(t, s.Flush(context.Background()))
	st := s.Stats()
	if st.Breaker != dualwrite.BreakerClosed || st.Drops[dualwrite.DropShadowError] != 3 || st.Dirty != 3 {
		t.Fatalf("refused inputs: breaker %s, drops %v, dirty %d", st.Breaker, st.Drops, st.Dirty)
	}
}

// refusing is a shadow whose rules refuse every value.
type refusing struct{ kv.Store }

func (r *refusing) Put(context.Context, string, []byte, kv.PutOptions) error {
	return fmt.Errorf("%w: refused by a stricter store", kv.ErrInvalidValue)
}
