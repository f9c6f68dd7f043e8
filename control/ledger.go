package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ReportRun is the record of one full shadow-report run, written in the
// Ledger when it ends, so that an operator can clear an overflowed settle
// set with it.
type ReportRun struct {
	ID         string
	StartedAt  time.Time
	FinishedAt time.Time
	Account    string
	Namespace  string
	Database   string
	// Parity, MinParity and Passed are the report's gate: Parity after an
	// applied repair when there was one.
	Parity    float64
	MinParity float64
	Passed    bool
	Verdict   string
	// Truth is the side taken as authoritative ("primary" or "shadow"),
	// Generation the stage document's generation when the run started (0:
	// none could be read).
	Truth      string
	Generation uint64
	// Overflows are the overflows open when the run started, each with
	// the Growth it had then: the run compared every key they lost.
	Overflows []SeenOverflow
}

// SeenOverflow is an overflow as a report run saw it at its start.
type SeenOverflow struct {
	ID     string
	Growth uint64
}

// Overflow is one instance's settle set overflowing for one namespace:
// raised when the instance first sees its reconciliation flag, grown as
// more keys go untracked, cleared by a report run.
type Overflow struct {
	ID        string
	Instance  string
	Namespace string
	RaisedAt  time.Time
	// Growth counts the times the instance saw the overflow grow (keys
	// lost to the set) since it was raised; a report that started before
	// the last growth cannot clear it.
	Growth    uint64
	ClearedAt time.Time
	// ClearedBy is the report run that cleared it; "" while open.
	ClearedBy string
}

// Open reports whether the overflow is not cleared yet.
func (o Overflow) Open() bool { return o.ClearedBy == "" }

// Ledger keeps report runs and overflows beside the stage document:
// MongoBoard, or MemoryLedger for one process.
type Ledger interface {
	// RecordReport stores a run; its ID must be new.
	RecordReport(ctx context.Context, run ReportRun) error
	// Report returns the run of that ID, or an error matching ErrNoRecord.
	Report(ctx context.Context, id string) (ReportRun, error)
	// OpenOverflows returns the overflows of a namespace not cleared yet.
	OpenOverflows(ctx context.Context, namespace string) ([]Overflow, error)
	// LastOverflow returns the newest overflow of an instance and
	// namespace, open or cleared.
	LastOverflow(ctx context.Context, instance, namespace string) (o Overflow, ok bool, err error)
	// SaveOverflow inserts or replaces an overflow by its ID.
	SaveOverflow(ctx context.Context, o Overflow) error
}

// NewID returns a random ID for a report run or an overflow.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// CheckClears says whether run may clear the open overflow o of the store
// of namespace and database: a full run of that store that passed a 100%
// gate and saw o with its current Growth. Its error matches
// ErrNotReconciled.
func CheckClears(run ReportRun, o Overflow, namespace, database string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: report %s %s", ErrNotReconciled, run.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case !o.Open():
		return fmt.Errorf("%w: overflow %s was cleared already, by report %s", ErrNotReconciled, o.ID, o.ClearedBy)
	case run.Namespace != namespace || run.Database != database:
		return refuse("compared namespace %s with database %s, not namespace %s with database %s", run.Namespace, run.Database, namespace, database)
	case run.FinishedAt.IsZero():
		return refuse("has not finished")
	case !run.Passed || run.MinParity < 100:
		return refuse("did not pass at 100%% parity (parity %.4f%%, minimum %g%%): repair what it lists (shadow-report --repair --apply) and run it again", run.Parity, run.MinParity)
	}
	i := slices.IndexFunc(run.Overflows, func(s SeenOverflow) bool { return s.ID == o.ID })
	switch {
	case i < 0:
		return refuse("started before overflow %s was recorded (raised %s): run a full report now", o.ID, o.RaisedAt.UTC().Format(time.RFC3339))
	case run.Overflows[i].Growth != o.Growth:
		return refuse("started before overflow %s last grew (growth %d then, %d now): run a full report now", o.ID, run.Overflows[i].Growth, o.Growth)
	}
	return nil
}

// MemoryLedger is a Ledger inside one process: for the demo and tests.
type MemoryLedger struct {
	mu        sync.Mutex
	runs      map[string]ReportRun
	overflows []Overflow // in the order raised
}

var _ Ledger = (*MemoryLedger)(nil)

// NewMemoryLedger returns an empty ledger.
func NewMemoryLedger() *MemoryLedger { return &MemoryLedger{runs: map[string]ReportRun{}} }

// RecordReport implements Ledger.
func (l *MemoryLedger) RecordReport(ctx context.Context, run ReportRun) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.runs[run.ID]; dup || run.ID == "" {
		return fmt.Errorf("%w: report run ID %q is empty or taken", ErrConflict, run.ID)
	}
	run.Overflows = slices.Clone(run.Overflows)
	l.runs[run.ID] = run
	return nil
}

// Report implements Ledger.
func (l *MemoryLedger) Report(ctx context.Context, id string) (ReportRun, error) {
	if err := ctx.Err(); err != nil {
		return ReportRun{}, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	run, ok := l.runs[id]
	if !ok {
		return ReportRun{}, fmt.Errorf("%w: %q", ErrNoRecord, id)
	}
	run.Overflows = slices.Clone(run.Overflows)
	return run, nil
}

// OpenOverflows implements Ledger.
func (l *MemoryLedger) OpenOverflows(ctx context.Context, namespace string) ([]Overflow, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Overflow
	for _, o := range l.overflows {
		if o.Namespace == namespace && o.Open() {
			out = append(out, o)
		}
	}
	return out, nil
}

// LastOverflow implements Ledger.
func (l *MemoryLedger) LastOverflow(ctx context.Context, instance, namespace string) (Overflow, bool, error) {
	if err := ctx.Err(); err != nil {
		return Overflow{}, false, fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.overflows) - 1; i >= 0; i-- {
		if o := l.overflows[i]; o.Instance == instance && o.Namespace == namespace {
			return o, true, nil
		}
	}
	return Overflow{}, false, nil
}

// SaveOverflow implements Ledger.
func (l *MemoryLedger) SaveOverflow(ctx context.Context, o Overflow) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrBoard, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.IndexFunc(l.overflows, func(x Overflow) bool { return x.ID == o.ID }); i >= 0 {
		l.overflows[i] = o
		return nil
	}
	l.overflows = append(l.overflows, o)
	return nil
}
