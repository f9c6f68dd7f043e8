package report

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// engine is one run: its sides, its scope and what it has committed.
type engine struct {
	cfg            Config
	ranges         []string
	primary        *side
	shadow         *side
	redact         *compare.Redactor
	expiries       bool
	fingerprint    string
	secret         []byte // saved in the checkpoint when drawn at random
	resumed        bool
	startedAt      time.Time
	priorRequests  [2]Requests // made by the runs before a resume
	lastCheckpoint time.Time

	// Committed state, owned by the committer; progress reads a copy of
	// the two counters under mu.
	mu sync.Mutex
	committed
	started  time.Time // of this process's run, for the rate
	baseline int64     // scanned when this process started

	// The keys found divergent, to read again after Config.Settle (up to
	// DefaultMaxSettle; settleOmitted the rest), and what that found.
	differing     []differing
	settleOmitted int64
	settled       *SettleReport
	left          []LeftKey
}

// committed is what a run has committed, in key order: what the checkpoint
// keeps (it holds raw keys, the position).
type committed struct {
	Position   position           `json:"position"`
	Scanned    int64              `json:"scanned"`            // union keys in scope
	Excluded   int64              `json:"excluded,omitempty"` // union keys in the ranges left out
	Module     string             `json:"module"`
	Modules    map[string]*Counts `json:"modules"`
	Records    []compare.Record   `json:"records"`
	Omitted    int64              `json:"omitted"`
	Binary     []compare.Record   `json:"binary,omitempty"`
	BinOmitted int64              `json:"binary_omitted,omitempty"`
	Large      []compare.Record   `json:"too_large,omitempty"`
	LargeOmit  int64              `json:"too_large_omitted,omitempty"`
	Repair     RepairCounts       `json:"repair"`
}

// Run scans both stores as cfg says and returns the report. When ctx ends
// it saves the checkpoint (see "Checkpoints" in the package doc) and
// returns an error matching ErrInterrupted.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	e := &engine{cfg: c, ranges: c.Scope.ranges(), committed: committed{Modules: make(map[string]*Counts)}}
	e.primary = newSide(Primary, c.Primary, c.Retries, c.Clock, e.notice)
	e.shadow = newSide(Shadow, c.Shadow, c.Retries, c.Clock, e.notice)
	e.expiries = e.primary.expiries() && e.shadow.expiries()
	e.fingerprint = fingerprint(c, e.ranges)
	e.started = c.Clock.Now()
	e.startedAt = e.started
	e.Repair.After = newKindCounts()
	if err := e.resume(); err != nil {
		return nil, err
	}
	if e.redact, err = compare.NewRedactor(c.KeyPolicy, e.hmacSecret()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := e.scan(ctx); err != nil {
		return nil, err
	}
	if err := e.settle(ctx); err != nil {
		return nil, err
	}
	if err := removeCheckpoint(c.Checkpoint); err != nil {
		return nil, err
	}
	return e.report(), nil
}

// hmacSecret is the configured secret, the one a resumed checkpoint kept,
// or a fresh random one that the checkpoint will keep.
func (e *engine) hmacSecret() []byte {
	if len(e.cfg.Secret) > 0 {
		return e.cfg.Secret
	}
	if e.secret == nil {
		e.secret = make([]byte, 32)
		_, _ = rand.Read(e.secret) // crypto/rand.Read never fails (Go 1.24+)
	}
	return e.secret
}

func (e *engine) notice(format string, args ...any) {
	if e.cfg.Notices != nil {
		fmt.Fprintf(e.cfg.Notices, format+"\n", args...)
	}
}

// scan runs the pipeline: one producer merging the listings, Concurrency
// workers reading and classifying batches, and this goroutine committing
// them in order. All are stopped and waited for before scan returns.
func (e *engine) scan(outer context.Context) error {
	ctx, cancel := context.WithCancel(outer)
	defer cancel()
	conc := e.cfg.Concurrency
	batches := make(chan *batch, conc)
	results := make(chan *batch, conc)
	window := make(chan struct{}, 2*conc)
	var produceErr, workErr error
	var sent int
	var errMu sync.Mutex
	fail := func(dst *error, err error) {
		errMu.Lock()
		if *dst == nil {
			*dst = err
		}
		errMu.Unlock()
		cancel()
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(batches)
		var err error
		if sent, err = e.produce(ctx, e.Position, batches, window); err != nil {
			fail(&produceErr, err)
		}
	})
	var workers sync.WaitGroup
	for range conc {
		workers.Go(func() {
			for b := range batches {
				if err := e.process(ctx, b); err != nil {
					fail(&workErr, err)
					continue // drain, so the producer is never stuck
				}
				select {
				case results <- b:
				case <-ctx.Done():
				}
			}
		})
	}
	wg.Go(func() {
		workers.Wait()
		close(results)
	})
	stopProgress := e.startProgress()

	pending := make(map[int]*batch)
	next := 0
	var saveErr error
	for b := range results {
		pending[b.seq] = b
		for pb, ok := pending[next]; ok; pb, ok = pending[next] {
			delete(pending, next)
			next++
			e.commit(pb)
			<-window
			if saveErr == nil && ctx.Err() == nil {
				if saveErr = e.maybeSave(false); saveErr != nil {
					cancel()
				}
			}
		}
	}
	wg.Wait() // every goroutine is done: the errors and sent are final
	stopProgress()
	if produceErr == nil && workErr == nil && saveErr == nil && next == sent {
		return nil // complete: the caller removes the checkpoint
	}
	if err := e.maybeSave(true); err != nil && saveErr == nil {
		saveErr = err
	}
	if outer.Err() != nil {
		return e.interrupted(context.Cause(outer), saveErr)
	}
	// Without an outer cancellation, context errors are the echo of our
	// own cancel after the first real failure.
	var causes []error
	for _, err := range []error{produceErr, workErr, saveErr} {
		if err != nil && !errors.Is(err, context.Canceled) {
			causes = append(causes, err)
		}
	}
	return e.failed(errors.Join(causes...))
}

func (e *engine) interrupted(cause, saveErr error) error {
	where := "no checkpoint was configured, so a new run starts over"
	switch {
	case saveErr != nil:
		return fmt.Errorf("%w after %d keys, and the checkpoint could not be saved: %w", ErrInterrupted, e.Scanned, saveErr)
	case e.cfg.Checkpoint != "":
		where = "run again with the same checkpoint to resume"
	}
	return fmt.Errorf("%w after %d keys (%s): %w", ErrInterrupted, e.Scanned, where, cause)
}

func (e *engine) failed(cause error) error {
	if e.cfg.Checkpoint != "" && !errors.Is(cause, ErrCheckpoint) {
		return fmt.Errorf("%w (the %d keys committed are in the checkpoint)", cause, e.Scanned)
	}
	return cause
}

// commit adds a batch to the committed state, in sequence order.
func (e *engine) commit(b *batch) {
	e.mu.Lock()
	defer e.mu.Unlock()
	// In the order met, so that the module cap falls alike on every run.
	for _, name := range b.order {
		c := b.counts[name]
		m := e.Modules[name]
		if m == nil {
			if len(e.Modules) >= e.cfg.MaxModules {
				name = OtherModules
				m = e.Modules[name]
			}
			if m == nil {
				m = &Counts{Kinds: newKindCounts()}
				e.Modules[name] = m
			}
		}
		m.add(c)
	}
	e.Records = keepRecords(e.Records, &e.Omitted, b.records, e.cfg.MaxRecords)
	e.Binary = keepRecords(e.Binary, &e.BinOmitted, b.binary, e.cfg.MaxRecords)
	e.Large = keepRecords(e.Large, &e.LargeOmit, b.large, e.cfg.MaxRecords)
	e.Repair.add(&b.repair)
	for _, d := range b.differing {
		if len(e.differing) < DefaultMaxSettle {
			e.differing = append(e.differing, d)
		} else {
			e.settleOmitted++
		}
	}
	e.Scanned += b.consumed
	e.Excluded += b.excluded
	if b.last != "" || b.consumed > 0 {
		e.Module = b.last
	}
	e.Position = b.pos
}

// keepRecords appends add to kept up to max records, and counts the rest in
// omitted.
func keepRecords(kept []compare.Record, omitted *int64, add []compare.Record, max int) []compare.Record {
	for _, r := range add {
		if len(kept) < max {
			kept = append(kept, r)
		} else {
			*omitted++
		}
	}
	return kept
}
