package proxy_test

import (
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
	"github.com/kvshadow/kvshadow/service"
)

// TestConformance runs the whole kv suite through cloudflare-go against the
// proxy, whose primary is the REST emulator over HTTP and whose shadow is
// the embedded MongoDB-compatible server: the proxy keeps the contract. It
// runs in dualwrite, where the emulator answers, and in live, where MongoDB
// does, so that every write and read (metadata included) goes through the
// proxy to each store and back. Every part shares one fake clock, started
// at the real time so that a real MongoDB's TTL monitor never deletes what
// the suite still reads.
func TestConformance(t *testing.T) {
	for _, stage := range []string{"dualwrite", "live"} {
		t.Run(stage, func(t *testing.T) {
			clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
			kvtest.Run(t, kvtest.Harness{
				New: func(t *testing.T) kv.Store {
					em := newEmulator(t, clk)
					// Four lanes: the embedded server's SQLite, under the
					// race detector, has faulted (SIGBUS in its WAL index)
					// with sixteen lanes' concurrent upserts of
					// ConcurrentWriters.
					in := startInProcess(t, em.environment(srv.Database(t)), []string{"--stage", stage, "--new-pairing", "--lanes", "4"}, service.WithClock(clk))
					return in.client(t, clk)
				},
				Advance:   clk.Advance,
				Now:       clk.Now,
				ListsInfo: true,
			})
		})
	}
}
