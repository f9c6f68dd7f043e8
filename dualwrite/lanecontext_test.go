package dualwrite_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A copy cut off by the watchdog cancels the context its lane keeps across
// operations; the lane's next copies run under a fresh one and land, both
// for a caller whose context carries values (the Observer's trace context)
// and for one whose context is context.Background().
func TestLaneRecoversFromATimeout(t *testing.T) {
	for _, c := range []struct {
		name   string
		caller func(e *env) context.Context
	}{
		{name: "values", caller: (*env).ctx},
		{name: "background", caller: func(*env) context.Context { return context.Background() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite})
			cfg := dualwrite.Config{
				Primary: e.pmem, Shadow: e.shadow, Stage: dualwrite.DualWrite, Lanes: 1,
				ConsistencyWindow: -1, ShadowTimeout: time.Second, RepairInterval: never,
				Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100},
			}
			opts := []dualwrite.Option{dualwrite.WithClock(e.clk), dualwrite.WithLogger(discardLogger())}
			if c.name == "values" {
				opts = append(opts, dualwrite.WithObserver(e.obs))
			}
			s, err := dualwrite.New(cfg, opts...)
			must(t, err)
			defer s.Close(context.Background())

			e.shadow.SetLatency(time.Hour, 0)
			timers := e.clk.Timers()
			must(t, s.Put(c.caller(e), "wordle:stuck", []byte("v"), kv.PutOptions{}))
			waitFor(t, "the copy and the watchdog to wait", func() bool {
				return e.shadow.Stats().InFlight == 1 && e.clk.Timers() >= timers+2
			})
			e.clk.Advance(time.Second)
			waitFor(t, "the watchdog to cut the copy off", func() bool { return s.Stats().Drops[dualwrite.DropTimeout] == 1 })
			e.shadow.SetLatency(0, 0)
			for _, k := range []string{"wordle:a", "wordle:b"} {
				must(t, s.Put(c.caller(e), k, []byte("v"), kv.PutOptions{}))
			}
			must(t, s.Flush(context.Background()))
			st := s.Stats()
			if st.Drops[dualwrite.DropTimeout] != 1 || st.Drops[dualwrite.DropShadowError] != 0 {
				t.Fatalf("drops %v, want the one timeout", st.Drops)
			}
			for _, k := range []string{"wordle:a", "wordle:b"} {
				if v, err := e.smem.Get(context.Background(), k); err != nil || string(v) != "v" {
					t.Fatalf("shadow's %s after the lane's timeout: %q, %v", k, v, err)
				}
			}
		})
	}
}
