package service

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// stuckLedger records nothing until released, then records as a
// MemoryLedger does, or fails while broken.
type stuckLedger struct {
	*control.MemoryLedger
	release chan struct{}
	mu      sync.Mutex
	broken  bool
}

func (l *stuckLedger) RecordConflict(ctx context.Context, c control.ConflictRecord) error {
	select {
	case <-l.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	broken := l.broken
	l.mu.Unlock()
	if broken {
		return control.ErrBoard
	}
	return l.MemoryLedger.RecordConflict(ctx, c)
}

// A store's conflicts are logged on its own log and recorded in the
// ledger with the instance's name; a queue that the ledger cannot keep up
// with counts what it could not hold as unrecorded (still logged), as it
// does a ledger that fails; Close records what is queued, and past its
// deadline counts the rest as unrecorded.
func TestConflictsAreRecordedInTheLedger(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ledger := &stuckLedger{MemoryLedger: control.NewMemoryLedger(), release: make(chan struct{})}
	r := newConflictRecorder(ledger, "proxy-a", log)
	r.rate = 0 // the queue's bound, not the rate's
	r.Start()
	sink := r.sink("demo-kv", log.With(slog.String("kv_namespace", "demo-kv"))).(dualwrite.ConflictSink)
	c := dualwrite.Conflict{Namespace: "wordle", Key: "wordle:#ab", Outcome: dualwrite.LateConflict, Received: time.Now()}
	// The goroutine takes one and waits on the ledger; the queue fills.
	sink.Conflict(t.Context(), c)
	for len(r.queue) > 0 {
		time.Sleep(time.Millisecond)
	}
	for range conflictQueue + 1 {
		sink.Conflict(t.Context(), c)
	}
	if n := r.Unrecorded(); n != 1 {
		t.Fatalf("%d unrecorded with the queue full, want 1", n)
	}
	if got := strings.Count(logged.String(), "kv_namespace=demo-kv"); got < conflictQueue+2 {
		t.Fatalf("%d conflict lines name the store's namespace, want %d", got, conflictQueue+2)
	}
	if !strings.Contains(logged.String(), "not recorded in the control ledger: the queue to the control ledger is full") {
		t.Fatalf("the first drop is not logged:\n%s", logged.String())
	}
	close(ledger.release)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r.Close(ctx)
	recs, total, err := ledger.Conflicts(t.Context(), "demo-kv", 1)
	if err != nil || total != conflictQueue+1 || len(recs) != 1 || recs[0].Instance != "proxy-a" || recs[0].KVNamespace != "demo-kv" || recs[0].Key != c.Key || recs[0].ID == "" {
		t.Fatalf("recorded %d: %+v, %v", total, recs, err)
	}
	// Closed: a conflict still arriving is logged and counted.
	sink.Conflict(t.Context(), c)
	if n := r.Unrecorded(); n != 2 {
		t.Fatalf("%d unrecorded after Close, want 2", n)
	}

	// A failing ledger, and a Close whose deadline passes.
	broken := &stuckLedger{MemoryLedger: control.NewMemoryLedger(), release: make(chan struct{}), broken: true}
	close(broken.release)
	r = newConflictRecorder(broken, "proxy-a", log)
	r.Start()
	r.sink("demo-kv", log).(dualwrite.ConflictSink).Conflict(t.Context(), c)
	stuck := &stuckLedger{MemoryLedger: control.NewMemoryLedger(), release: make(chan struct{})}
	r2 := newConflictRecorder(stuck, "proxy-a", log)
	r2.Start()
	for range 3 {
		r2.sink("demo-kv", log).(dualwrite.ConflictSink).Conflict(t.Context(), c)
	}
	short, cancel2 := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel2()
	r2.Close(short)
	r.Close(ctx)
	if n, n2 := r.Unrecorded(), r2.Unrecorded(); n != 1 || n2 != 3 {
		t.Fatalf("unrecorded: %d from a failing ledger (want 1), %d past Close's deadline (want 3)", n, n2)
	}

	// A conflict whose losing side could not be kept counts as unkept.
	r3 := newConflictRecorder(control.NewMemoryLedger(), "proxy-a", log)
	r3.Start()
	defer r3.Close(ctx)
	sink3 := r3.sink("demo-kv", log).(dualwrite.ConflictSink)
	sink3.Conflict(t.Context(), c)
	unkept := c
	unkept.KeepError = "keep: the store of kept sides is unavailable"
	sink3.Conflict(t.Context(), unkept)
	if n := r3.unkept.Load(); n != 1 {
		t.Fatalf("%d unkept, want the one with a keep error", n)
	}
}

// The service records conflicts in its ledger (the embedded defaults' is
// in memory) and exports how many it could not record.
func TestTheServiceExportsItsUnrecordedConflicts(t *testing.T) {
	r := start(t)
	for _, name := range []string{"kvshadow_conflicts_unrecorded_total{", "kvshadow_conflicts_unkept_total{"} {
		if lines := grep(r.scrape(t), name); !strings.HasSuffix(lines, " 0") {
			t.Fatalf("%s: %q", name, lines)
		}
	}
}

// A conflict whose losing side was kept is recorded before the sink
// returns, so that the tee's batch is answered only once the record
// exists; one that was not is queued; a kept one the ledger refuses is
// queued for the goroutine to try again, and a record the ledger has
// already under its ID counts as recorded.
func TestKeptConflictsAreRecordedAtOnce(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ledger := control.NewMemoryLedger()
	r := newConflictRecorder(ledger, "proxy-a", log) // not started: nothing drains the queue
	sink := r.sink("demo-kv", log).(dualwrite.ConflictSink)
	c := dualwrite.Conflict{Namespace: "wordle", Key: "wordle:#ab", Outcome: dualwrite.LateConflict, Received: time.Now()}
	kept := c
	kept.Kept = "ref-1"
	sink.Conflict(t.Context(), kept)
	sink.Conflict(t.Context(), c)
	recs, total, err := ledger.Conflicts(t.Context(), "demo-kv", 10)
	if err != nil || total != 1 || recs[0].Kept != "ref-1" || len(r.queue) != 1 {
		t.Fatalf("recorded %d (%+v, %v), queued %d; want the kept one recorded, the other queued", total, recs, err, len(r.queue))
	}

	broken := &stuckLedger{MemoryLedger: control.NewMemoryLedger(), release: make(chan struct{}), broken: true}
	close(broken.release)
	rb := newConflictRecorder(broken, "proxy-a", log)
	rb.sink("demo-kv", log).(dualwrite.ConflictSink).Conflict(t.Context(), kept)
	if len(rb.queue) != 1 {
		t.Fatalf("a kept conflict the ledger refused: %d queued, want 1 to try again", len(rb.queue))
	}

	rec := <-r.queue
	if err := ledger.RecordConflict(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	r.record(rec) // its answer lost, the same record again
	if n := r.Unrecorded(); n != 0 {
		t.Fatalf("%d unrecorded: a record already under its ID counts as recorded", n)
	}
}

// Past conflictRate conflicts a minute for a namespace, those without a
// kept side are logged and counted as not recorded, so that one client's
// copies cannot push the records kept before out of the ledger; another
// namespace has its own minute, a conflict whose side was kept is always
// recorded, and the minute refills.
func TestConflictRecordsAreRateBound(t *testing.T) {
	ledger := control.NewMemoryLedger()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := newConflictRecorder(ledger, "proxy-a", log)
	clk := clock.NewFake(time.Now())
	r.clock = clk
	r.Start()
	sink := r.sink("demo-kv", log).(dualwrite.ConflictSink)
	c := dualwrite.Conflict{Namespace: "wordle", Key: "wordle:#ab", Outcome: dualwrite.LateConflict, Received: time.Now()}
	for range conflictRate + 100 {
		sink.Conflict(t.Context(), c)
	}
	kept := c
	kept.Kept = "ref-1"
	sink.Conflict(t.Context(), kept)
	r.sink("other-kv", log).(dualwrite.ConflictSink).Conflict(t.Context(), c)
	clk.Advance(time.Minute)
	sink.Conflict(t.Context(), c)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r.Close(ctx)
	_, n, _ := ledger.Conflicts(t.Context(), "demo-kv", 0)
	_, other, _ := ledger.Conflicts(t.Context(), "other-kv", 0)
	if n != conflictRate+2 || other != 1 || r.Unrecorded() != 100 {
		t.Fatalf("recorded %d (want %d: the minute's, the kept one, one a minute later), %d for another namespace; %d unrecorded, want 100",
			n, conflictRate+2, other, r.Unrecorded())
	}
}
