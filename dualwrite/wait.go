package dualwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/clock"
)

// ErrNotSettled: WaitSettled returned before every key written through the
// Store was settled (its context ended, the stage verifies nothing, or the
// settle set overflowed); the Left it returns says what is left.
var ErrNotSettled = errors.New("dualwrite: not settled")

// Left is what WaitSettled found not yet settled: the settle set's dirty
// and unsettled keys, the copies still queued or running in the lanes, and
// whether the set overflowed (keys only a full reconciliation finds).
type Left struct {
	Dirty, Unsettled     int
	Queued               int64
	ReconciliationNeeded bool
}

// Settled reports whether nothing is left.
func (l Left) Settled() bool {
	return l.Dirty == 0 && l.Unsettled == 0 && l.Queued == 0 && !l.ReconciliationNeeded
}

func (l Left) String() string {
	s := fmt.Sprintf("%d dirty, %d unsettled, %d queued", l.Dirty, l.Unsettled, l.Queued)
	if l.ReconciliationNeeded {
		s += ", reconciliation needed"
	}
	return s
}

// settledPoll is how often WaitSettled looks again, on the Store's clock.
const settledPoll = 50 * time.Millisecond

// WaitSettled waits until every key written through the Store so far is
// settled: no copy queued or running, no key dirty or unsettled. It drives
// what the Store would do on its own schedule: each round it drains the
// lanes (Flush), runs a verification pass (Settle), queues the repair of
// the dirty keys (RepairDirty) and drains again, then looks every 50 ms on
// the Store's clock (a clock.Fake must be advanced).
//
// A key settles only once its last write is a ConsistencyWindow old, so
// with the default window a wait lasts at least a minute after the last
// write. Against stores that read their own writes at once (the memory
// store, mongokv, the kvapi emulator without -consistency-window) set
// ConsistencyWindow negative; against the emulator with -consistency-window
// D, set it to D. While the breaker is open the wait goes on until it closes.
//
// It returns a nil error and a zero Left once settled. It returns Left and
// an error matching ErrNotSettled (and ctx's error when ctx ended) when ctx
// ends first; at once, after draining the lanes, in a stage that verifies
// nothing (Off, Complete) with keys still in the settle set; and once the
// set has emptied when it overflowed (Stats.ReconciliationNeeded): then
// only a full reconciliation (shadow-report --repair --apply) settles the
// keys it lost. It fails with an error matching kv.ErrClosed after Close.
func (s *Store) WaitSettled(ctx context.Context) (Left, error) {
	for {
		left, done, err := s.settleRound(ctx)
		if done || err != nil {
			return left, err
		}
		if err := clock.Wait(ctx, s.clock.NewTimer(settledPoll)); err != nil {
			return s.left(), fmt.Errorf("%w: %s: %w", ErrNotSettled, s.left(), err)
		}
	}
}

// settleRound makes one round of WaitSettled: done when it has an answer.
func (s *Store) settleRound(ctx context.Context) (Left, bool, error) {
	notYet := func(err error) (Left, bool, error) {
		left := s.left()
		if errors.Is(err, errClosed) {
			return left, true, err
		}
		return left, true, fmt.Errorf("%w: %s: %w", ErrNotSettled, left, err)
	}
	if err := s.Flush(ctx); err != nil {
		return notYet(err)
	}
	if s.closed.Load() {
		return notYet(errClosed)
	}
	if st := s.Stage(); !st.mirrors() {
		if left := s.left(); left.Dirty+left.Unsettled > 0 {
			return notYet(fmt.Errorf("stage %s verifies nothing", st))
		}
		return s.finish()
	}
	if _, err := s.Settle(ctx); err != nil && ctx.Err() != nil {
		return notYet(ctx.Err())
	}
	if s.left().Dirty > 0 && s.RepairDirty() > 0 {
		if err := s.Flush(ctx); err != nil {
			return notYet(err)
		}
	}
	if left := s.left(); left.Dirty+left.Unsettled > 0 || left.Queued > 0 {
		return left, false, nil
	}
	return s.finish()
}

// finish answers a round that found the set empty and the lanes idle.
func (s *Store) finish() (Left, bool, error) {
	left := s.left()
	if left.ReconciliationNeeded {
		return left, true, fmt.Errorf("%w: the settle set overflowed: only a full reconciliation (shadow-report --repair --apply) settles the keys it lost", ErrNotSettled)
	}
	if left.Queued > 0 {
		return left, false, nil
	}
	return Left{}, true, nil
}

func (s *Store) left() Left {
	dirty, unsettled, _, reconcile := s.set.snapshot()
	return Left{Dirty: dirty, Unsettled: unsettled, Queued: s.ctr.queued.Load(), ReconciliationNeeded: reconcile}
}
