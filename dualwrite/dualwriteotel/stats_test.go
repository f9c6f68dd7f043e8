package dualwriteotel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
)

// wantValue fails the test unless the last collection holds name at want.
func wantValue(t *testing.T, f *fixture, name string, want float64) {
	t.Helper()
	if v, ok := telemetrytest.Value(f.rec.Collect(t), name); !ok || v != want {
		t.Errorf("%s = %v (reported %v), want %v", name, v, ok, want)
	}
}

// Two keys written around the layer, in Workers KV alone, are read through
// it: the first difference becomes a suspect, the second finds the suspects
// full (MaxSuspects 1) and is dropped. Once the shadow holds the value too,
// the verification a window later clears the suspicion.
func TestSuspectGauges(t *testing.T) {
	const window = 10 * time.Second
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	shadow := memory.New(memory.Config{})
	f := newFixture(t, shadow, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: window,
		MaxSuspects: 1, RepairInterval: time.Hour}, dualwriteotel.WithStoreOptions(dualwrite.WithClock(clk)))
	for _, k := range []string{"wordle:a", "wordle:b"} {
		if err := f.primary.Put(ctx, k, []byte("around the layer"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.KV.Get(ctx, k); err != nil {
			t.Fatal(err)
		}
		f.flush(t)
	}
	if st := f.st.Dual.Stats(); st.Suspects != 1 || st.SuspectOverflow != 1 || st.Unsettled+st.Dirty != 0 {
		t.Fatalf("Stats: %d suspects, %d overflowed, %d in the settle set; want 1, 1, 0", st.Suspects, st.SuspectOverflow, st.Unsettled+st.Dirty)
	}
	wantValue(t, f, dualwriteotel.MetricSuspectKeys, 1)
	wantValue(t, f, dualwriteotel.MetricSuspectOverflow, 1)
	wantValue(t, f, dualwriteotel.MetricSuspicionsCleared, 0)

	if err := shadow.Put(ctx, "wordle:a", []byte("around the layer"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(window)
	if _, err := f.st.Dual.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if st := f.st.Dual.Stats(); st.Suspects != 0 || st.Cleared != 1 {
		t.Fatalf("Stats after the verification: %d suspects, %d cleared; want 0, 1", st.Suspects, st.Cleared)
	}
	wantValue(t, f, dualwriteotel.MetricSuspectKeys, 0)
	wantValue(t, f, dualwriteotel.MetricSuspicionsCleared, 1)
	wantValue(t, f, dualwriteotel.MetricSuspectsSuperseded, 0)

	// A suspect whose key is then written through the layer is neither
	// cleared nor confirmed: the write supersedes it, and its key waits in
	// the settle set for that write's verification.
	if err := f.primary.Put(ctx, "wordle:c", []byte("around the layer"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.KV.Get(ctx, "wordle:c"); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	if err := f.st.KV.Put(ctx, "wordle:c", []byte("through the layer"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	if st := f.st.Dual.Stats(); st.Suspects != 0 || st.SuspectsSuperseded != 1 || st.Cleared != 1 || st.Unsettled != 1 {
		t.Fatalf("Stats after the write: %d suspects, %d superseded, %d cleared, %d unsettled; want 0, 1, 1, 1",
			st.Suspects, st.SuspectsSuperseded, st.Cleared, st.Unsettled)
	}
	wantValue(t, f, dualwriteotel.MetricSuspectsSuperseded, 1)
}

// While the shadow holds a key's copy, the next write of the key waits in
// its lane and the one after replaces it there.
func TestCoalescedCopies(t *testing.T) {
	ctx := context.Background()
	gate := newGateStore()
	f := newFixture(t, gate, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, RepairInterval: time.Hour})
	t.Cleanup(gate.open)
	put := func(v string) {
		t.Helper()
		if err := f.st.KV.Put(ctx, "wordle:a", []byte(v), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("1")
	<-gate.entered // the shadow holds the first copy
	put("2")
	put("3")
	if st := f.st.Dual.Stats(); st.Coalesced != 1 {
		t.Fatalf("Stats.Coalesced = %d, want 1", st.Coalesced)
	}
	wantValue(t, f, dualwriteotel.MetricCoalesced, 1)
	gate.open()
	f.flush(t)
	if v, err := gate.Get(ctx, "wordle:a"); err != nil || string(v) != "3" {
		t.Errorf("the shadow holds %q (%v), want the last write", v, err)
	}
}

// heldJournal is a dualwrite.Journal in memory whose Commit waits until
// released, as a slow disk does; entered says a commit has begun.
type heldJournal struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldJournal() *heldJournal {
	return &heldJournal{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (j *heldJournal) Load(context.Context) (map[string]dualwrite.Mark, bool, error) {
	return nil, false, nil
}

func (j *heldJournal) Commit(ctx context.Context, _ map[string]dualwrite.Mark, _ bool) error {
	j.entered <- struct{}{}
	select {
	case <-j.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (j *heldJournal) open() { j.once.Do(func() { close(j.release) }) }

// While the journal holds a commit, the marks of the writes made meanwhile
// wait for the next one: journal.pending counts them, and journal.commits
// the commits once they land.
func TestJournalPending(t *testing.T) {
	ctx := context.Background()
	j := newHeldJournal()
	// A window longer than the test keeps each key unsettled: one mark each.
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j, ConsistencyWindow: time.Hour, RepairInterval: time.Hour})
	t.Cleanup(j.open)
	put := func(k string) {
		t.Helper()
		if err := f.st.KV.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("wordle:a")
	<-j.entered // the committer holds wordle:a's mark
	put("wordle:b")
	put("wordle:c")
	f.flush(t)
	if st := f.st.Dual.Stats(); st.JournalPending != 2 || st.JournalCommits != 0 {
		t.Fatalf("Stats: %d pending, %d commits; want 2, 0", st.JournalPending, st.JournalCommits)
	}
	wantValue(t, f, dualwriteotel.MetricJournalPending, 2)
	wantValue(t, f, dualwriteotel.MetricJournalCommits, 0)

	j.open()
	waitFor(t, "both commits", func() bool { st := f.st.Dual.Stats(); return st.JournalCommits == 2 && st.JournalPending == 0 })
	wantValue(t, f, dualwriteotel.MetricJournalPending, 0)
	wantValue(t, f, dualwriteotel.MetricJournalCommits, 2)

	// Without a journal neither is reported, as journal.ok is not.
	none := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite})
	rm := none.rec.Collect(t)
	for _, name := range []string{dualwriteotel.MetricJournalPending, dualwriteotel.MetricJournalCommits} {
		if v, ok := telemetrytest.Value(rm, name); ok {
			t.Errorf("%s = %v reported without a journal", name, v)
		}
	}
}
