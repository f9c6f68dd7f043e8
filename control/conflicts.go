package control

import (
	"context"
	"fmt"
	"slices"

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
