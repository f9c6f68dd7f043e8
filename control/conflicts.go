package control

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
)

// ConflictRecord is a late tee copy's Conflict as an instance recorded it
// beside the stage document: every instance's in one place, so that any
// instance lists them all and a restart loses none. It holds what the
// Conflict holds (digests and times, the key as the redaction policy
// renders it), never a value.
type ConflictRecord struct {
	// ID is unique (NewID); Instance is the instance that took the copy,
	// KVNamespace the Workers KV namespace ID of the store it went to
	// (Conflict.Namespace is the key's own namespace, its prefix).
	ID          string
	Instance    string
	KVNamespace string
	dualwrite.Conflict
	// Decision is the operator's, once made (package keep); nil until then.
	Decision *Decision
}

// Decision is what the operator decided for a recorded conflict: which side
// stands (Keep: "copy" or "shadow", as the record names them), whether the
// kept side was written back for it (Restored) over a key written since
// the conflict (Forced), when and by which instance.
type Decision struct {
	Keep     string    `json:"keep"`
	Restored bool      `json:"restored"`
	Forced   bool      `json:"forced,omitempty"`
	At       time.Time `json:"at"`
	Instance string    `json:"instance"`
}

// MaxConflictRecords is how many records a ConflictLedger keeps for a
// Workers KV namespace, the latest: a bot version that still writes its binding after
// the flip makes one for every write, and the count, the log and the
// metrics go on counting what is no longer kept.
const MaxConflictRecords = 10000

// ConflictLedger keeps ConflictRecords: MongoBoard (its ConflictsCollection)
// and MemoryLedger are ones.
type ConflictLedger interface {
	// RecordConflict stores a record; its ID must be new.
	RecordConflict(ctx context.Context, c ConflictRecord) error
	// Conflicts returns the latest records of a Workers KV namespace,
	// newest first, at most limit of them, and how many it keeps for it.
	Conflicts(ctx context.Context, kvNamespace string, limit int) ([]ConflictRecord, int64, error)
	// Undecided is how many records of a Workers KV namespace it keeps
	// that have no decision.
	Undecided(ctx context.Context, kvNamespace string) (int64, error)
	// Conflict returns the record id, or an error matching ErrNoConflict.
	Conflict(ctx context.Context, id string) (ConflictRecord, error)
	// Decide records the decision for the record id, once: ErrNoConflict
	// when there is no such record, ErrDecided when it has a decision.
	Decide(ctx context.Context, id string, d Decision) error
}

var (
	_ ConflictLedger = (*MemoryLedger)(nil)
	_ ConflictLedger = (*MongoBoard)(nil)
)

// RecordConflict implements ConflictLedger.
func (l *MemoryLedger) RecordConflict(ctx context.Context, c ConflictRecord) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.ID == "" || l.ids[c.ID] {
		return fmt.Errorf("%w: conflict record ID %q is empty or taken", ErrConflict, c.ID)
	}
	if l.kept == nil {
		l.kept, l.ids = map[string]int{}, map[string]bool{}
	}
	l.ids[c.ID] = true
	l.conflicts = append(l.conflicts, c)
	if l.kept[c.KVNamespace]++; l.kept[c.KVNamespace] > MaxConflictRecords {
		oldest := slices.IndexFunc(l.conflicts, func(x ConflictRecord) bool { return x.KVNamespace == c.KVNamespace })
		delete(l.ids, l.conflicts[oldest].ID)
		l.conflicts = slices.Delete(l.conflicts, oldest, oldest+1)
		l.kept[c.KVNamespace]--
	}
	return nil
}

// Conflicts implements ConflictLedger.
func (l *MemoryLedger) Conflicts(ctx context.Context, kvNamespace string, limit int) ([]ConflictRecord, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ConflictRecord
	var total int64
	for i := len(l.conflicts) - 1; i >= 0; i-- {
		if c := l.conflicts[i]; c.KVNamespace == kvNamespace {
			total++
			if len(out) < limit {
				out = append(out, c)
			}
		}
	}
	return out, total, nil
}

// Conflict implements ConflictLedger.
func (l *MemoryLedger) Conflict(ctx context.Context, id string) (ConflictRecord, error) {
	if err := ctx.Err(); err != nil {
		return ConflictRecord{}, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conflicts {
		if c.ID == id {
			return c, nil
		}
	}
	return ConflictRecord{}, fmt.Errorf("%w: %q", ErrNoConflict, id)
}

// Decide implements ConflictLedger.
func (l *MemoryLedger) Decide(ctx context.Context, id string, d Decision) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.conflicts, func(c ConflictRecord) bool { return c.ID == id })
	switch {
	case i < 0:
		return fmt.Errorf("%w: %q", ErrNoConflict, id)
	case l.conflicts[i].Decision != nil:
		return fmt.Errorf("%w: %q", ErrDecided, id)
	}
	l.conflicts[i].Decision = &d
	return nil
}

// Undecided implements ConflictLedger.
func (l *MemoryLedger) Undecided(ctx context.Context, kvNamespace string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.conflicts {
		if c.KVNamespace == kvNamespace && c.Decision == nil {
			n++
		}
	}
	return n, nil
}
