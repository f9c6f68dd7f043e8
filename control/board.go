package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// The errors of this package.
var (
	// ErrConflict: the Document's generation was not the one expected:
	// another change won. Read it again and decide anew.
	ErrConflict = errors.New("control: the stage document changed meanwhile")
	// ErrNotDrained: a flip was refused because an instance is not drained
	// and clean. It matches dualwrite.ErrUnsynced too.
	ErrNotDrained = errors.New("control: an instance is not drained and clean")
	// ErrBoard: the Board could not be read or written.
	ErrBoard = errors.New("control: the control board is unavailable")
	// ErrConfig: a Config that NewFollower refuses.
	ErrConfig = errors.New("control: invalid config")
	// ErrNoRecord: the Ledger holds no report run of that ID.
	ErrNoRecord = errors.New("control: no such report run")
	// ErrNotReconciled: a report run that cannot clear an overflow (not
	// full, not passed, of another store, or started before the overflow
	// last grew); the message says which.
	ErrNotReconciled = errors.New("control: the report does not show the overflow reconciled")
)

// Document is the stage every instance runs.
type Document struct {
	Stage dualwrite.Stage
	// Generation grows by one at each change; 0 means no document yet.
	Generation uint64
	UpdatedAt  time.Time
	UpdatedBy  string // the instance that made the change
	// Pairing is what the Document governs; zero in one written before
	// pairings were recorded.
	Pairing Pairing
}

// describe names d for a loser of a change.
func (d Document) describe() string {
	if d.Generation == 0 {
		return "there is no stage document"
	}
	s := fmt.Sprintf("the stage is %s at generation %d", d.Stage, d.Generation)
	if d.UpdatedBy != "" {
		s += ", set by instance " + d.UpdatedBy
	}
	return s
}

// Heartbeat is what an instance reports about itself.
type Heartbeat struct {
	Instance   string
	Generation uint64
	Stage      dualwrite.Stage
	At         time.Time
	// Drained: every copy queued before At had reached the other store.
	Drained bool
	// Dirty keys (copy known lost) and Unsettled keys (copy sent, not yet
	// verified); ReconciliationNeeded after the dirty set overflowed.
	Dirty                int
	Unsettled            int
	ReconciliationNeeded bool
	// QuietUntil, IngestUnverified and FenceRemaining are the instance's
	// handover fence (dualwrite.FenceStatus).
	QuietUntil       time.Time
	IngestUnverified int
	FenceRemaining   time.Duration
	// Watermarks holds, for each Workers KV namespace the instance serves,
	// its store's dualwrite.Store.Watermark (see Fleet).
	Watermarks map[string]time.Time
	// ComparePending: in handover, not dualwrite.FenceStatus.Compared yet.
	ComparePending bool
	// StageKey is what the last read of dualwrite.StageKey found when it
	// holds the flip (dualwrite.StageKeyStatus.Holds).
	StageKey string
	// Draining: the instance is shutting down; Stopped: it has stopped and
	// this is its last report.
	Draining bool
	Stopped  bool
	Lag      string // as Status.Lag
}

// Clean reports no dirty key and no pending reconciliation: what a live
// instance must report for a flip (its unsettled keys it verifies itself;
// under load there are always some).
func (h Heartbeat) Clean() bool {
	return h.Dirty == 0 && !h.ReconciliationNeeded
}

// Settled reports Clean and no unsettled key either: what an instance that
// stopped must have reported for a flip.
func (h Heartbeat) Settled() bool { return h.Clean() && h.Unsettled == 0 }

// Board is where the instances share the Document and their heartbeats:
// NewMongoBoard, or NewMemoryBoard for one process.
type Board interface {
	// Load returns the Document; a zero Document when there is none yet.
	Load(ctx context.Context) (Document, error)
	// Swap writes next if the Document's generation is still expect (0:
	// there is none), else fails with ErrConflict.
	Swap(ctx context.Context, expect uint64, next Document) error
	Beat(ctx context.Context, h Heartbeat) error
	Instances(ctx context.Context) ([]Heartbeat, error)
	// Forget removes an instance's heartbeat, if any.
	Forget(ctx context.Context, instance string) error
}
