package keep_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/kv"
)

// watched is MongoDB's store with a watch on one key's reads: the next
// read of it says so on read, then lets the caller on once a write of it
// came back (wrote) or at most hold later, as a slow server would.
type watched struct {
	*memory.Store
	mu    sync.Mutex
	key   string
	read  chan struct{}
	wrote chan struct{}
	hold  time.Duration
}

func (w *watched) watch(key string) (read, wrote chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.key, w.read, w.wrote = key, make(chan struct{}), make(chan struct{})
	return w.read, w.wrote
}

func (w *watched) seen(key string) {
	w.mu.Lock()
	read, wrote := w.read, w.wrote
	if key != w.key || read == nil {
		w.mu.Unlock()
		return
	}
	w.read = nil
	w.mu.Unlock()
	close(read)
	select {
	case <-wrote:
	case <-time.After(w.hold):
	}
}

func (w *watched) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	e, err := w.Store.GetEntry(ctx, key)
	w.seen(key)
	return e, err
}

func (w *watched) GetValue(ctx context.Context, key string) (kv.Entry, error) {
	e, err := w.Store.GetValue(ctx, key)
	w.seen(key)
	return e, err
}

// A decision that restores a kept side, raced by a front PUT of its key
// that starts once the decision has read the key: round after round, the
// PUT, acknowledged, is never overwritten by the older kept side. The
// decision holds the key's write order from its check to its write
// (dualwrite.Store.WriteIf), so the PUT comes before its check (and the
// decision refuses) or after its write.
func TestDecisionsNeverOverwriteARacingWrite(t *testing.T) {
	clk := clock.NewFake(start)
	workersKV := memory.New(memory.Config{Clock: clk})
	mongo := &watched{Store: memory.New(memory.Config{Clock: clk}), hold: 20 * time.Millisecond}
	ledger := control.NewMemoryLedger()
	kept := keep.NewMemoryStore(keep.Config{Clock: clk})
	s, err := dualwrite.New(dualwrite.Config{Primary: workersKV, Shadow: mongo, Stage: dualwrite.Live, FenceInterval: -1,
		ConsistencyWindow: time.Minute, Keeper: kept, Sink: ledgerSink{ledger}}, dualwrite.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	clk.Advance(2 * time.Minute)
	s.SetPeersUntil(clk.Now().Add(time.Hour))
	d := &keep.Decider{Ledger: ledger, Kept: kept, Instance: "a", Clock: clk,
		Target: func(ns string) (keep.Target, bool) { return s, ns == "ns" }}
	ctx := context.Background()
	put := func(st kv.Store, key, value string) {
		if err := st.Put(ctx, key, []byte(value), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	const rounds = 25
	lost, restored := 0, 0
	for i := range rounds {
		key := fmt.Sprintf("wordle:race-%d", i)
		put(workersKV, key, "through-b")
		put(mongo.Store, key, "through-b")
		if err := s.Ingest(ctx, []dualwrite.TeeWrite{{Key: key, Value: []byte("binding"), At: clk.Now().Add(-5 * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		recs, _, _ := ledger.Conflicts(ctx, "ns", 1)
		if len(recs) != 1 || recs[0].Kept == "" {
			t.Fatalf("round %d: no record with a kept side: %+v", i, recs)
		}
		read, wrote := mongo.watch(key)
		newer := fmt.Sprintf("newer-%d", i)
		putDone := make(chan error, 1)
		go func() {
			<-read // the decision has read the key
			err := s.Put(ctx, key, []byte(newer), kv.PutOptions{})
			close(wrote)
			putDone <- err
		}()
		rec, err := d.Decide(ctx, recs[0].ID, keep.Copy, false)
		switch {
		case err == nil && rec.Decision.Restored:
			restored++
		case errors.Is(err, keep.ErrWrittenSince):
		default:
			t.Fatalf("round %d: Decide: %+v, %v", i, rec.Decision, err)
		}
		if err := <-putDone; err != nil {
			t.Fatal(err)
		}
		if v, err := s.Get(ctx, key); err != nil || string(v) != newer {
			lost++
			t.Errorf("round %d: the key holds %q, %v after the decision (restored %v); the acknowledged PUT of %q is lost", i, v, err, restored > 0, newer)
		}
	}
	t.Logf("%d rounds: %d decisions restored the kept side before the PUT, %d acknowledged PUTs overwritten", rounds, restored, lost)
}

// A key written since the conflict back to the value that stood, but with
// another expiry, is written since: the decision refuses it.
func TestDecisionsSeeAnExpiryWrittenSince(t *testing.T) {
	r := newRig(t)
	id := r.late("wordle:ttl", "binding", "through-b", "through-b")
	if err := r.store.Put(context.Background(), "wordle:ttl", []byte("through-b"), kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, keep.ErrWrittenSince) {
		t.Fatalf("over the same value with a new expiry: %v, want ErrWrittenSince", err)
	}
	r.both("wordle:ttl", "through-b")
}
