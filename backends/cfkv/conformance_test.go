package cfkv_test

import (
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

// TestConformance runs the whole kv suite through cloudflare-go against
// the kvapi server over memory, both on one fake clock.
func TestConformance(t *testing.T) {
	clk := clock.NewFake(start)
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			// No retries: they would wait on the fake clock, and nothing in
			// the suite should need one.
			return newRig(t, clk, func(c *cfkv.Config) { c.MaxRetries = -1 }).store
		},
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
}
