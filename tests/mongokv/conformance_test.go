package mongokv_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

// TestConformance runs the whole kv suite through the real driver, each
// subtest in a fresh database, on a fake clock that the read-time expiry
// filter follows. The clock starts at the real time so that a real MongoDB's
// TTL monitor never deletes what the suite still reads.
func TestConformance(t *testing.T) {
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Millisecond))
	logs := &logSink{}
	client := newClient(t, mongokv.ClientConfig{Logger: slog.New(logs)})
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			return newStore(t, client, mongokv.Config{Clock: clk})
		},
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
	// FerretDB cannot make TTL indexes: said once for the whole run.
	if n := logs.count("cannot build TTL indexes"); client.TTLIndexUnsupported() != (n == 1) || n > 1 {
		t.Errorf("TTL-unsupported warnings = %d with TTLIndexUnsupported() = %v; want exactly one when unsupported", n, client.TTLIndexUnsupported())
	}
}
