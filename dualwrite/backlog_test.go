package dualwrite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A bulk write of 10,000 keys to a shadow that does not move: its copies
// are all admitted (no lane_full drop), wait in their lanes' backlogs off
// the caller's path, keep their keys' order against a newer single write,
// are waited for by Flush, and reach the shadow once it moves.
func TestBulkWriteIsAdmittedWhole(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.DualWrite, ConsistencyWindow: -1, ShadowTimeout: never, RepairInterval: never, // see drive
	})
	e.shadow.SetLatency(time.Hour, 0) // stuck until the clock moves
	const n = 10_000
	entries := make([]kv.Entry, n)
	for i := range entries {
		entries[i] = kv.Entry{Key: key(i), Value: fmt.Appendf(nil, "bulk %d", i)}
	}
	must(t, e.store.PutMany(e.ctx(), entries))
	st := e.store.Stats()
	if st.Drops[dualwrite.DropLaneFull] != 0 || st.Queued != n {
		t.Fatalf("after the bulk write: %d lane_full drops, %d queued, want 0 and %d", st.Drops[dualwrite.DropLaneFull], st.Queued, n)
	}
	// The last key of the bulk waits in a backlog: a newer write of it
	// replaces its copy there rather than overtaking it.
	e.put(key(n-1), "newer", kv.PutOptions{})
	e.shadow.SetLatency(0, 0)
	e.drive(time.Hour)
	e.flush()
	st = e.store.Stats()
	if st.Drops[dualwrite.DropLaneFull] != 0 || st.Dirty != 0 || st.Coalesced != 1 {
		t.Fatalf("after the shadow moved: drops %v, %d dirty, %d coalesced", st.Drops, st.Dirty, st.Coalesced)
	}
	sameContents(t, e.pmem, e.smem)
}
