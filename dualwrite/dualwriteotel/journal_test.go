package dualwriteotel_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
)

// flakyJournal is a dualwrite.Journal in memory whose commits fail while
// broken is set, as a full or lost volume does.
type flakyJournal struct {
	broken  atomic.Bool
	mu      sync.Mutex
	commits int
}

func (j *flakyJournal) Load(context.Context) (map[string]dualwrite.Mark, bool, error) {
	return nil, false, nil
}

func (j *flakyJournal) Commit(context.Context, map[string]dualwrite.Mark, bool) error {
	if j.broken.Load() {
		return errors.New("no space left on device")
	}
	j.mu.Lock()
	j.commits++
	j.mu.Unlock()
	return nil
}

// A journal that cannot commit shows as journal.ok 0 and counted errors,
// and back to 1 once it commits again; a store without a journal reports
// neither, so that no alert reads a journal that is not there.
func TestJournalGauges(t *testing.T) {
	ctx := context.Background()
	j := &flakyJournal{}
	j.broken.Store(true)
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j})
	if err := f.st.KV.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed commit", func() bool { return f.st.Dual.Stats().JournalErrors > 0 })
	rm := f.rec.Collect(t)
	if v, ok := telemetrytest.Value(rm, dualwriteotel.MetricJournalOK); !ok || v != 0 {
		t.Errorf("journal.ok = %v (%v) while commits fail, want 0", v, ok)
	}
	if v, _ := telemetrytest.Value(rm, dualwriteotel.MetricJournalErrors); v < 1 {
		t.Errorf("journal.errors = %v, want at least 1", v)
	}
	j.broken.Store(false)
	waitFor(t, "a commit after the failure", func() bool { return f.st.Dual.Stats().JournalOK })
	if v, _ := telemetrytest.Value(f.rec.Collect(t), dualwriteotel.MetricJournalOK); v != 1 {
		t.Errorf("journal.ok = %v once commits succeed, want 1", v)
	}

	none := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite})
	rm = none.rec.Collect(t)
	for _, name := range []string{dualwriteotel.MetricJournalOK, dualwriteotel.MetricJournalErrors} {
		if v, ok := telemetrytest.Value(rm, name); ok {
			t.Errorf("%s = %v reported without a journal", name, v)
		}
	}
}

// waitFor polls cond: a wait for the store's committer, not a measurement.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
