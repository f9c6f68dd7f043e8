package keep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/kv"
)

// ledgerSink records each Conflict in the ledger, as kvshadow-proxy's
// recorder does.
type ledgerSink struct{ l *control.MemoryLedger }

func (ledgerSink) Divergence(context.Context, compare.Record) {}

func (s ledgerSink) Conflict(ctx context.Context, c dualwrite.Conflict) {
	_ = s.l.RecordConflict(ctx, control.ConflictRecord{ID: control.NewID(), Instance: "a", KVNamespace: "ns", Conflict: c})
}

// flaky fails the next Decide once with fail, when set.
type flaky struct {
	*control.MemoryLedger
	fail error
}

func (f *flaky) Decide(ctx context.Context, id string, d control.Decision) error {
	if err := f.fail; err != nil {
		f.fail = nil
		return err
	}
	return f.MemoryLedger.Decide(ctx, id, d)
}

type rig struct {
	t                *testing.T
	clk              *clock.Fake
	workersKV, mongo *memory.Store
	store            *dualwrite.Store
	ledger           *flaky
	kept             *keep.MemoryStore
	d                *keep.Decider
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, clk: clock.NewFake(start)}
	r.workersKV, r.mongo = memory.New(memory.Config{Clock: r.clk}), memory.New(memory.Config{Clock: r.clk})
	r.ledger = &flaky{MemoryLedger: control.NewMemoryLedger()}
	r.kept = keep.NewMemoryStore(keep.Config{Clock: r.clk})
	s, err := dualwrite.New(dualwrite.Config{Primary: r.workersKV, Shadow: r.mongo, Stage: dualwrite.Live, FenceInterval: -1,
		ConsistencyWindow: time.Minute, Keeper: r.kept, Sink: ledgerSink{r.ledger.MemoryLedger}}, dualwrite.WithClock(r.clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	r.store = s
	r.clk.Advance(2 * time.Minute)
	// Another instance is alive: late copies are not ordered by this one's
	// window.
	s.SetPeersUntil(r.clk.Now().Add(time.Hour))
	r.d = &keep.Decider{Ledger: r.ledger, Kept: r.kept, Instance: "a", Clock: r.clk,
		Target: func(ns string) (keep.Target, bool) { return s, ns == "ns" }}
	return r
}

func (r *rig) put(s kv.Store, key, value string) {
	r.t.Helper()
	if err := s.Put(context.Background(), key, []byte(value), kv.PutOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// late ingests a copy of value for key, after Workers KV holds kvHolds and
// MongoDB mongoHolds, and returns its record's ID.
func (r *rig) late(key, value, kvHolds, mongoHolds string) string {
	r.t.Helper()
	r.put(r.workersKV, key, kvHolds)
	r.put(r.mongo, key, mongoHolds)
	err := r.store.Ingest(context.Background(), []dualwrite.TeeWrite{{Key: key, Value: []byte(value), At: r.clk.Now().Add(-5 * time.Second)}})
	if err != nil {
		r.t.Fatal(err)
	}
	recs, _, _ := r.ledger.Conflicts(context.Background(), "ns", 1)
	if len(recs) != 1 || recs[0].Kept == "" {
		r.t.Fatalf("no record with a kept side: %+v", recs)
	}
	return recs[0].ID
}

// both checks that MongoDB and Workers KV hold want for key.
func (r *rig) both(key, want string) {
	r.t.Helper()
	if err := r.store.Flush(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	for name, s := range map[string]kv.Store{"MongoDB": r.mongo, "Workers KV": r.workersKV} {
		if v, err := s.Get(context.Background(), key); err != nil || string(v) != want {
			r.t.Fatalf("%s: %s holds %q, %v; want %q", key, name, v, err, want)
		}
	}
}

func (r *rig) decide(id string, side keep.Side, force bool) (control.ConflictRecord, error) {
	return r.d.Decide(context.Background(), id, side, force)
}

// A decision for the side that lost writes it back through the dual-write
// store, to both stores; one for the side that stands writes nothing; each
// is recorded once and discards what was kept.
func TestDecisionsRestoreTheSideThatLost(t *testing.T) {
	r := newRig(t)
	// A conflict: MongoDB's value stands, the copy is kept.
	id := r.late("wordle:conflict", "binding", "through-b", "through-b")
	rec, err := r.decide(id, keep.Copy, false)
	if err != nil || rec.Decision == nil || !rec.Decision.Restored || rec.Decision.Forced || rec.Decision.Keep != "copy" {
		t.Fatalf("Decide(copy) = %+v, %v", rec.Decision, err)
	}
	r.both("wordle:conflict", "binding")
	if _, err := r.kept.Load(context.Background(), rec.Kept); !errors.Is(err, keep.ErrGone) {
		t.Fatalf("the kept side after the decision: %v, want it discarded", err)
	}
	if _, err := r.decide(id, keep.Shadow, false); !errors.Is(err, control.ErrDecided) {
		t.Fatalf("a second decision: %v, want ErrDecided", err)
	}

	// Applied while b may have written: the copy stands, MongoDB's is kept.
	id = r.late("wordle:witness", "binding", "binding", "through-b")
	r.both("wordle:witness", "binding")
	if _, err := r.decide(id, keep.Shadow, false); err != nil {
		t.Fatal(err)
	}
	r.both("wordle:witness", "through-b")

	// Keeping the side that stands writes nothing.
	id = r.late("wordle:stands", "binding", "through-b", "through-b")
	r.put(r.workersKV, "wordle:stands", "untouched")
	rec, err = r.decide(id, keep.Shadow, false)
	if err != nil || rec.Decision.Restored {
		t.Fatalf("Decide(shadow) of a conflict: %+v, %v", rec.Decision, err)
	}
	if v, _ := r.workersKV.Get(context.Background(), "wordle:stands"); string(v) != "untouched" {
		t.Fatalf("a decision for the standing side wrote %q", v)
	}
}

// A key written since the conflict is not overwritten unless the decision
// forces it; a decision whose write was made but not recorded is taken
// again without a second write; what cannot be carried out says why.
func TestDecisionsNeverOverwriteUnasked(t *testing.T) {
	r := newRig(t)
	id := r.late("wordle:k", "binding", "through-b", "through-b")
	r.put(r.store, "wordle:k", "newer")
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, keep.ErrWrittenSince) {
		t.Fatalf("over a newer write: %v, want ErrWrittenSince", err)
	}
	r.both("wordle:k", "newer")
	rec, err := r.decide(id, keep.Copy, true)
	if err != nil || !rec.Decision.Forced || !rec.Decision.Restored {
		t.Fatalf("forced: %+v, %v", rec.Decision, err)
	}
	r.both("wordle:k", "binding")

	id = r.late("wordle:unrecorded", "binding", "through-b", "through-b")
	r.ledger.fail = control.ErrBoard
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, control.ErrBoard) {
		t.Fatalf("with the ledger down: %v", err)
	}
	r.both("wordle:unrecorded", "binding")
	if rec, err := r.decide(id, keep.Copy, false); err != nil || rec.Decision.Forced {
		t.Fatalf("the decision again: %+v, %v", rec.Decision, err)
	}

	// Another decision recorded while this one wrote: it says it wrote.
	id = r.late("wordle:race", "binding", "through-b", "through-b")
	r.ledger.fail = control.ErrDecided
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, control.ErrDecided) || !strings.Contains(err.Error(), "wrote the kept side back") {
		t.Fatalf("decided by another meanwhile: %v", err)
	}

	id = r.late("wordle:other", "binding", "through-b", "through-b")
	r.d.Target = func(string) (keep.Target, bool) { return nil, false }
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, keep.ErrNotServed) {
		t.Fatalf("a namespace not served: %v", err)
	}
	if _, err := r.decide(id, "mongodb", false); !errors.Is(err, keep.ErrSide) {
		t.Fatalf("a side of another name: %v", err)
	}
	if _, err := r.decide("no-such-id", keep.Copy, false); !errors.Is(err, control.ErrNoConflict) {
		t.Fatalf("an unknown record: %v", err)
	}
	if err := r.kept.Discard(context.Background(), mustRecord(t, r, id).Kept); err != nil {
		t.Fatal(err)
	}
	if _, err := r.decide(id, keep.Copy, false); !errors.Is(err, keep.ErrGone) {
		t.Fatalf("nothing kept: %v, want ErrGone", err)
	}
	if _, err := r.decide(id, keep.Shadow, false); err != nil {
		t.Fatalf("keeping the standing side needs nothing kept: %v", err)
	}
}

func mustRecord(t *testing.T, r *rig, id string) control.ConflictRecord {
	t.Helper()
	rec, err := r.ledger.Conflict(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
