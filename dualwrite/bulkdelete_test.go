package dualwrite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// TestRepairsNeverDeleteInBulk: keys deleted while the other store was
// down are deleted from it by repair when they are few (50); when they are
// more than MaxRepairDeletes (150), the pass deletes none of them: the
// deletes are held, counted and said, their keys stay dirty, until
// AllowDeletes.
func TestRepairsNeverDeleteInBulk(t *testing.T) {
	for _, n := range []int{50, dualwrite.MaxRepairDeletes + 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, RepairInterval: never,
				Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100_000}})
			for i := range n {
				e.put(key(i), "v", kv.PutOptions{})
			}
			e.flush()
			e.shadow.SetOutage(true)
			for i := range n {
				must(t, e.store.Delete(e.ctx(), key(i)))
			}
			e.flush()
			e.shadow.SetOutage(false)
			for range 2 { // a window for the writes, and one for the difference (the confirmation rule)
				e.clk.Advance(time.Minute)
				e.store.RepairDirty()
				e.flush()
			}
			st := e.store.Stats()
			if n <= dualwrite.MaxRepairDeletes {
				if e.smem.Len() != 0 || st.Dirty != 0 || st.DeletesHeld != 0 {
					t.Fatalf("%d deletes to repair: the shadow holds %d keys, %d dirty, %d held; want all deleted", n, e.smem.Len(), st.Dirty, st.DeletesHeld)
				}
				return
			}
			if e.smem.Len() != n || st.Dirty != n || st.DeletesHeld != n || st.Repairs[dualwrite.RepairHeld] != uint64(n) || st.Repairs[dualwrite.RepairDeleted] != 0 {
				t.Fatalf("%d deletes to repair: the shadow holds %d keys, %d dirty, %d held, repairs %v; want none deleted, all held", n, e.smem.Len(), st.Dirty, st.DeletesHeld, st.Repairs)
			}
			e.clk.Advance(time.Minute)
			e.store.RepairDirty()
			e.flush()
			if e.smem.Len() != n || e.store.Stats().DeletesHeld != n {
				t.Fatalf("a later pass: the shadow holds %d keys, %d held; want the hold kept", e.smem.Len(), e.store.Stats().DeletesHeld)
			}
			if got := e.store.AllowDeletes(); got != n {
				t.Fatalf("AllowDeletes allowed %d, want %d", got, n)
			}
			e.flush()
			if st := e.store.Stats(); e.smem.Len() != 0 || st.Dirty != 0 || st.DeletesHeld != 0 {
				t.Fatalf("after AllowDeletes: the shadow holds %d keys, %d dirty, %d held", e.smem.Len(), st.Dirty, st.DeletesHeld)
			}
		})
	}
}
