package report_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// The gate under steady traffic, as an operator runs it: a dual-write
// store writes a key every 0.3 s (over 8 keys) through a shadow whose copies
// take 0.2 s, so that at any moment a copy is likely on its way, and three
// shadow-report runs are made back to back, each reading the keys that
// differ again 2 s after it read them (--settle 2s; the primary here has no
// consistency window to wait out). The three verdicts agree: PASS, each
// copy on its way left for later or found landed. Then a write around the
// layer (MongoDB changed behind the store, on a key nothing else writes)
// fails all three, and names that key.
func TestGateAgreesUnderTraffic(t *testing.T) {
	r := newRig(t)
	slow, err := kvfault.New(r.shadow, kvfault.Config{Name: "shadow", Latency: 200 * time.Millisecond, RealLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := dualwrite.New(dualwrite.Config{Primary: r.primary, Shadow: slow, Stage: dualwrite.Shadow, ConsistencyWindow: time.Second},
		dualwrite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(300 * time.Millisecond) // the traffic's pace, in real time
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := st.Put(ctx, fmt.Sprintf("wordle:hot-%d", i%8), fmt.Appendf(nil, "v%d", i), kv.PutOptions{}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	})
	t.Cleanup(func() {
		stop()
		wg.Wait()
		_ = st.Close(context.Background())
	})
	time.Sleep(time.Second) // traffic under way: the gate meets it mid-stream

	verdicts := func(args ...string) (passed []bool, left int64, failing []compare.Record) {
		t.Helper()
		for range 3 {
			res := r.run(t, context.Background(), append([]string{"--settle", "2s", "--keys", "plain"}, args...)...)
			if res.report == nil {
				t.Fatalf("no report (exit %d): %s", res.code, res.stderr)
			}
			passed = append(passed, res.report.Passed)
			if res.report.Settle != nil {
				left += res.report.Settle.Left
			}
			failing = append(failing, res.report.Divergences...)
		}
		return passed, left, failing
	}
	passed, left, failing := verdicts()
	t.Logf("under traffic: verdicts %v, %d keys left for later over three runs", passed, left)
	for i, p := range passed {
		if !p {
			t.Errorf("run %d of 3 under traffic failed the gate on a copy on its way: %+v", i+1, failing)
		}
	}

	if err := r.shadow.Put(context.Background(), "wordle:around", []byte("written around the layer"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.primary.Put(context.Background(), "wordle:around", []byte("the primary's"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	passed, left, failing = verdicts()
	t.Logf("with a write around the layer: verdicts %v, %d keys left for later", passed, left)
	for i, p := range passed {
		if p {
			t.Errorf("run %d of 3 passed with a write around the layer", i+1)
		}
	}
	for _, d := range failing {
		if d.Kind.Divergent() && d.Key != "wordle:around" {
			t.Errorf("a divergence counted that is not the write around the layer: %+v", d)
		}
	}
}
