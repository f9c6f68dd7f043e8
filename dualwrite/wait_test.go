package dualwrite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// waitRig is a Store over two memory stores on the real clock, the shadow
// behind a fault wrapper, with no consistency window: what a bot's test
// against an emulator has.
func waitRig(t *testing.T, cfg dualwrite.Config) (st *dualwrite.Store, primary, shadow *memory.Store, fault *kvfault.Store) {
	t.Helper()
	primary, shadow = memory.New(memory.Config{}), memory.New(memory.Config{})
	fault, err := kvfault.New(shadow, kvfault.Config{Name: "shadow"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Primary, cfg.Shadow, cfg.Stage = primary, fault, dualwrite.DualWrite
	cfg.ConsistencyWindow, cfg.FenceInterval = -1, -1
	cfg.RepairInterval = time.Hour // the wait, not the Store's own schedule, must settle the keys
	cfg.Breaker = dualwrite.BreakerConfig{FailuresToOpen: 2, OpenTimeout: 50 * time.Millisecond}
	st, err = dualwrite.New(cfg, dualwrite.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	return st, primary, shadow, fault
}

// sameStores fails the test unless a and b hold the same keys and values.
func sameStores(t *testing.T, a, b *memory.Store) {
	t.Helper()
	ctx := t.Context()
	ka, kb := listAll(t, a), listAll(t, b)
	if fmt.Sprint(ka) != fmt.Sprint(kb) {
		t.Fatalf("the stores hold different keys: %d against %d", len(ka), len(kb))
	}
	for _, k := range ka {
		va, _ := a.Get(ctx, k)
		vb, _ := b.Get(ctx, k)
		if !bytes.Equal(va, vb) {
			t.Fatalf("key %s differs", k)
		}
	}
}

func listAll(t *testing.T, s kv.Store) []string {
	t.Helper()
	var keys []string
	for cursor := ""; ; {
		res, err := s.List(t.Context(), kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Keys...)
		if res.Done {
			return keys
		}
		cursor = res.Cursor
	}
}

// Writes made while the shadow was down leave their keys dirty; once it is
// back, WaitSettled returns only when every key is repaired and verified,
// and the two stores hold the same data.
func TestWaitSettledRepairsWhatAnOutageLeftDirty(t *testing.T) {
	st, primary, shadow, fault := waitRig(t, dualwrite.Config{})
	ctx := t.Context()
	for i := range 20 {
		if err := st.Put(ctx, fmt.Sprintf("wordle:k%02d", i), []byte{byte(i)}, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fault.SetOutage(true)
	for i := range 30 {
		if err := st.Put(ctx, fmt.Sprintf("wordle:k%02d", i), []byte{'o', byte(i)}, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "wordle:k03"); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Stats().Dirty == 0 {
		t.Fatal("the outage left no key dirty: the test proves nothing")
	}

	// While the shadow is down the wait ends with its context, saying
	// what is left.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	left, err := st.WaitSettled(short)
	cancel()
	if !errors.Is(err, dualwrite.ErrNotSettled) || !errors.Is(err, context.DeadlineExceeded) || left.Dirty == 0 || left.Settled() {
		t.Fatalf("WaitSettled with the shadow down = %+v, %v; want the dirty keys counted and ErrNotSettled", left, err)
	}

	fault.SetOutage(false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	left, err = st.WaitSettled(wctx)
	if err != nil || !left.Settled() {
		t.Fatalf("WaitSettled = %+v, %v", left, err)
	}
	if s := st.Stats(); s.Dirty+s.Unsettled != 0 || s.Queued != 0 {
		t.Fatalf("settled, yet Stats says %d dirty, %d unsettled, %d queued", s.Dirty, s.Unsettled, s.Queued)
	}
	sameStores(t, primary, shadow)
}

// Keys that overflowed the settle set are not known to the Store: the wait
// says that only a reconciliation settles them.
func TestWaitSettledSaysWhenOnlyAReconciliationWill(t *testing.T) {
	st, _, _, fault := waitRig(t, dualwrite.Config{MaxDirty: 2})
	ctx := t.Context()
	fault.SetOutage(true)
	for i := range 5 {
		if err := st.Put(ctx, fmt.Sprintf("k%d", i), []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	fault.SetOutage(false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	left, err := st.WaitSettled(wctx)
	if !errors.Is(err, dualwrite.ErrNotSettled) || wctx.Err() != nil || !left.ReconciliationNeeded || left.Dirty+left.Unsettled != 0 {
		t.Fatalf("WaitSettled after an overflow = %+v, %v; want the set emptied and a reconciliation asked for", left, err)
	}
}

// After Close the wait fails as every call does.
func TestWaitSettledAfterClose(t *testing.T) {
	st, _, _, _ := waitRig(t, dualwrite.Config{})
	if err := st.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WaitSettled(t.Context()); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("WaitSettled after Close: %v", err)
	}
}
