package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TestStageChangesUnderLoad walks the stages forth and back through the
// admin API while writers and readers go on through cloudflare-go: no
// client call fails, and afterwards both stores hold the same value for
// every key.
func TestStageChangesUnderLoad(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	in := startInProcess(t, em.environment(db), []string{"--stage", "dualwrite", "--compare-rate", "1", "--repair-interval", "1s"})
	client := in.client(t, nil)
	ctx := context.Background()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// A load the shadow can follow, as a bot's is: a flip waits for the
	// lanes to drain, which a shadow always slower than the writes never
	// lets happen (the embedded server under the race detector does a few
	// dozen writes a second). The writers hold back while copies queue up.
	var backlog atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				backlog.Store(in.stats(t).Total.Queued)
			}
		}
	}()
	var calls, failures atomic.Int64
	var failMu sync.Mutex
	var firstFailure error
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for backlog.Load() > 32 {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
				key := fmt.Sprintf("wordle:%d:%d", w, i%25) // keys are rewritten across stages
				err := client.Put(ctx, key, []byte(fmt.Sprintf("v%d", i)), kv.PutOptions{})
				if err == nil {
					_, err = client.Get(ctx, key)
				}
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					failMu.Lock()
					if firstFailure == nil {
						firstFailure = err
					}
					failMu.Unlock()
				}
			}
		}()
	}
	walk := []string{"shadow", "handover", "live", "rampdown", "live", "handover", "shadow", "dualwrite", "shadow", "handover", "live"}
	for _, stage := range walk {
		before := calls.Load()
		eventually(t, "traffic", func() bool { return calls.Load() > before+40 })
		// A flip may be refused while a copy is still under way; it is
		// asked again until the lanes are drained and clean.
		var last map[string]any
		eventually(t, "the stage "+stage, func() bool {
			code, out := in.setStage(t, stage)
			if code != http.StatusOK && fmt.Sprint(out) != fmt.Sprint(last) {
				t.Logf("PUT %s: %d %v; %+v", stage, code, out, in.stats(t).Total)
				last = out
			}
			return code == http.StatusOK
		})
		if s := in.stats(t); s.Total.Stage != stage {
			t.Fatalf("asked for %s, running %s", stage, s.Total.Stage)
		}
	}
	close(stop)
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d of %d client calls failed during the stage changes; the first: %v", failures.Load(), calls.Load(), firstFailure)
	}
	eventually(t, "the lanes drained", func() bool { return in.stats(t).Total.Queued == 0 })
	st := in.stats(t)
	if st.Total.Dirty != 0 {
		t.Fatalf("%d dirty keys after the walk: drops %v", st.Total.Dirty, st.Total.Drops)
	}
	shadow := shadowStore(t, db, nil)
	for w := range 4 {
		for i := range 25 {
			key := fmt.Sprintf("wordle:%d:%d", w, i)
			p, perr := em.store.Get(ctx, key)
			s, serr := shadow.Get(ctx, key)
			if perr != nil || serr != nil || string(p) != string(s) {
				t.Fatalf("%s: primary %q (%v), shadow %q (%v)", key, p, perr, s, serr)
			}
		}
	}
	t.Logf("%d client calls over %d stage changes, none failed", calls.Load(), len(walk))
}
