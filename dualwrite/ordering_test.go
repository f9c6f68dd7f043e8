package dualwrite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// Many goroutines run random puts, puts with TTL, deletes and reads over a
// few keys while the shadow is slower than the primary, with jitter. The
// lanes must apply each key's writes in the primary's order: after Close the
// stores are identical, and no comparison reported a divergence (there is
// no consistency window to hide one).
func TestOrderingProperty(t *testing.T) {
	e := newEnv(t, dualwrite.Config{
		Stage: dualwrite.Shadow, Lanes: 4, LaneDepth: 4096,
		CompareRate: 1, ConsistencyWindow: -1, ShadowTimeout: time.Hour,
	}, realLatency)
	e.primary.SetLatency(0, 20*time.Microsecond)
	e.primary.SetReplyLatency(0, 50*time.Microsecond)
	e.shadow.SetLatency(50*time.Microsecond, 250*time.Microsecond)
	const writers, ops, keys = 8, 250, 12
	var wg sync.WaitGroup
	var ready sync.WaitGroup // the final burst starts together
	ready.Add(writers)
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			ctx := context.Background()
			for i := range ops {
				k := fmt.Sprintf("wordle:k%02d", rng.IntN(keys))
				var err error
				switch rng.IntN(5) {
				case 0, 1:
					err = e.store.Put(ctx, k, fmt.Appendf(nil, "w%d-%d", w, i), kv.PutOptions{})
				case 2:
					ttl := time.Duration(60+rng.IntN(3600)) * time.Second
					err = e.store.Put(ctx, k, fmt.Appendf(nil, "w%d-%d-ttl", w, i), kv.PutOptions{TTL: ttl})
				case 3:
					err = e.store.Delete(ctx, k)
				case 4:
					_, err = e.store.Get(ctx, k)
					if isNotFound(err) {
						err = nil
					}
				}
				if err != nil {
					t.Errorf("op %d of writer %d: %v", i, w, err)
				}
			}
			// Only each key's last writes decide the end state, so end
			// with every writer writing every key at once.
			ready.Done()
			ready.Wait()
			for _, i := range rng.Perm(keys) {
				if err := e.store.Put(ctx, fmt.Sprintf("wordle:k%02d", i), fmt.Appendf(nil, "w%d-final", w), kv.PutOptions{}); err != nil {
					t.Errorf("final put of writer %d: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	must(t, e.store.Close(context.Background()))
	sameContents(t, e.pmem, e.smem)
	st := e.store.Stats()
	if st.Divergences() != 0 || len(e.sink.records()) != 0 {
		t.Fatalf("divergences reported: %v", st.Comparisons)
	}
	var compared uint64
	for _, n := range st.Comparisons {
		compared += n
	}
	if compared == 0 {
		t.Fatal("no comparison ran")
	}
	for r, n := range st.Drops {
		if n != 0 {
			t.Fatalf("%d writes dropped (%s): the property was not exercised", n, r)
		}
	}
}
