// Package ledgertest is the conformance suite of control.ConflictLedger:
// control's tests run it on the memory ledger, tests/proxy on MongoBoard
// over an embedded FerretDB (and any MongoDB at MONGODB_URI).
package ledgertest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// Decisions checks a ledger's decisions: a record reads back by its ID with
// what it was recorded with, its kept reference included; an unknown ID is
// ErrNoConflict; a decision is recorded once, and of several at once
// exactly one is taken; the decision reads back, by ID and in the listing,
// and the record no longer counts as undecided.
func Decisions(t *testing.T, l control.ConflictLedger) {
	ctx := context.Background()
	at := time.Now().Truncate(time.Millisecond).UTC()
	rec := control.ConflictRecord{ID: control.NewID(), Instance: "a", KVNamespace: "ns-decisions"}
	rec.Conflict = dualwrite.Conflict{Namespace: "wordle", Key: "wordle:#e6cdd21c", Outcome: dualwrite.LateApplied,
		Copy:    compare.Digest{Present: true, Length: 7, Hash: "dfbd8505c8af50f2"},
		Shadow:  compare.Digest{Present: true, Length: 2, Hash: "da95b47c84acb14d"},
		AckedAt: at, Received: at.Add(time.Second), PeersUntil: at.Add(15 * time.Second), Kept: "kept-1"}
	if err := l.RecordConflict(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, err := l.Conflict(ctx, rec.ID)
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("Conflict(%s) = %+v, %v; want %+v", rec.ID, got, err, rec)
	}
	if _, err := l.Conflict(ctx, "no-such-id"); !errors.Is(err, control.ErrNoConflict) {
		t.Fatalf("Conflict of an unknown ID: %v, want ErrNoConflict", err)
	}
	if err := l.Decide(ctx, "no-such-id", control.Decision{Keep: "copy", At: at}); !errors.Is(err, control.ErrNoConflict) {
		t.Fatalf("Decide of an unknown ID: %v, want ErrNoConflict", err)
	}

	if n, err := l.Undecided(ctx, rec.KVNamespace); err != nil || n != 1 {
		t.Fatalf("Undecided before the decision: %d, %v; want 1", n, err)
	}
	const deciders = 4
	errs := make([]error, deciders)
	var wg sync.WaitGroup
	for i := range deciders {
		wg.Go(func() {
			errs[i] = l.Decide(ctx, rec.ID, control.Decision{Keep: "shadow", Restored: true, At: at.Add(time.Minute), Instance: string(rune('a' + i))})
		})
	}
	wg.Wait()
	taken := -1
	for i, err := range errs {
		switch {
		case err == nil && taken < 0:
			taken = i
		case err == nil:
			t.Fatalf("two decisions taken: %d and %d", taken, i)
		case !errors.Is(err, control.ErrDecided):
			t.Fatalf("decision %d: %v, want nil or ErrDecided", i, err)
		}
	}
	if taken < 0 {
		t.Fatal("no decision taken")
	}
	want := control.Decision{Keep: "shadow", Restored: true, At: at.Add(time.Minute), Instance: string(rune('a' + taken))}
	got, err = l.Conflict(ctx, rec.ID)
	if err != nil || got.Decision == nil || *got.Decision != want {
		t.Fatalf("the decision read back: %+v, %v; want %+v", got.Decision, err, want)
	}
	list, _, err := l.Conflicts(ctx, rec.KVNamespace, 10)
	if err != nil || len(list) != 1 || list[0].Decision == nil || *list[0].Decision != want {
		t.Fatalf("the decision in the listing: %+v, %v", list, err)
	}
	if err := l.Decide(ctx, rec.ID, control.Decision{Keep: "copy", At: at}); !errors.Is(err, control.ErrDecided) {
		t.Fatalf("a second decision: %v, want ErrDecided", err)
	}
	if n, err := l.Undecided(ctx, rec.KVNamespace); err != nil || n != 0 {
		t.Fatalf("Undecided after the decision: %d, %v; want 0", n, err)
	}
}
