package dualwrite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// SetStage changes the stage at run time, under load, as CheckTransition
// allows and the package doc's Stages says, so that each write uses one
// stage from start to end; the flip waits for the fence (see Fence). If ctx
// ends before the lanes drain, the stage is unchanged.
func (s *Store) SetStage(ctx context.Context, to Stage) error {
	if !to.Valid() {
		return fmt.Errorf("%w: unknown stage %d", ErrInvalidConfig, to)
	}
	s.stageMu.Lock()
	say := func() {}
	if IsFlip(s.Stage(), to) {
		say = s.checkStageKey(ctx) // read back before the flip; the fence holds until it reads as written
	}
	from, err := s.switchStage(ctx, to)
	s.stageMu.Unlock()
	say()
	if err != nil || from == to {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "dualwrite: stage changed",
		slog.String("from", from.String()), slog.String("to", to.String()))
	s.obs.StageChanged(StageEvent{From: from, To: to})
	return nil
}

func (s *Store) switchStage(ctx context.Context, to Stage) (Stage, error) {
	from := s.Stage()
	if from == to {
		return from, nil
	}
	if err := CheckTransition(from, to); err != nil {
		return from, err
	}
	if err := s.markStage(ctx, from, to); err != nil {
		return from, err
	}
	flip := IsFlip(from, to)
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed.Load() {
		return from, errClosed
	}
	if flip {
		if err := s.barrier(ctx); err != nil {
			return from, fmt.Errorf("dualwrite: stage %s to %s: draining the lanes: %w", from, to, err)
		}
		if f := s.fenceAt(from, s.clock.Now()); !f.Clear() {
			if f.IngestUnverified > 0 || !f.CompareFrom.IsZero() && !f.Compared {
				// Verify them now rather than at the next interval, so
				// that the flip asked again can go.
				s.kickSettle()
			}
			return from, fenceError(f, from, to)
		}
	}
	s.stage.Store(uint32(to))
	s.stageSince.Store(s.clock.Now().UnixNano())
	switch {
	case to.authority() != RoleShadow:
		s.authSince.Store(0)
	case from.authority() != RoleShadow:
		s.authSince.Store(s.stageSince.Load())
	}
	kick(s.rearm) // the next pass follows the new stage's fence (nextPass)
	return from, nil
}

// Flush waits until every asynchronous operation queued before the call has
// finished, or ctx ends. It holds no lock while it waits for room in a full
// lane, so neither SetStage nor the callers' writes wait behind it.
func (s *Store) Flush(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return s.barrier(ctx)
}

// barrier drains every lane: the flip's, under the gate, and Flush's, without it.
func (s *Store) barrier(ctx context.Context) error {
	done, err := s.sendBarriers(ctx)
	if err != nil {
		return err
	}
	return s.waitAll(ctx, done)
}

// sendBarriers queues a barrier at the end of every lane, waiting for room.
func (s *Store) sendBarriers(ctx context.Context) ([]chan struct{}, error) {
	done := make([]chan struct{}, 0, len(s.lanes))
	for _, l := range s.lanes {
		c := make(chan struct{})
		s.ctr.queued.Add(1)
		if err := s.sendBarrier(ctx, l, job{done: c}); err != nil {
			s.ctr.queued.Add(-1)
			return nil, err
		}
		done = append(done, c)
	}
	return done, nil
}

func (s *Store) waitAll(ctx context.Context, done []chan struct{}) error {
	for _, c := range done {
		select {
		case <-c:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.quit:
			// The workers have stopped: a barrier sent as Close began
			// may have come too late to be reached.
			select {
			case <-c:
			default:
				return errClosed
			}
		}
	}
	return nil
}

// Close stops the Store (see Lifecycle in the package doc) and returns an
// error that counts the writes left undone (Stats.LeftAtClose); every
// goroutine New started has stopped when it returns. The wrapped stores
// and the Journal belong to the caller and are not closed. Calling Close
// again returns nil.
func (s *Store) Close(ctx context.Context) error {
	s.closeMu.Lock()
	if s.closeDone {
		s.closeMu.Unlock()
		return nil
	}
	s.closeDone = true
	cause := s.shutdown(ctx)
	var jerr error
	if s.journal != nil {
		jerr = s.commit(context.WithoutCancel(ctx))
	}
	s.closeMu.Unlock()

	left := s.ctr.leftAtClose.Load()
	dirty, unsettled, _, reconcile := s.set.snapshot()
	if dirty > 0 || reconcile {
		s.log.LogAttrs(context.Background(), slog.LevelWarn,
			"dualwrite: closed with dirty keys; the other store may differ until a repair or reconciliation",
			slog.Int("dirty", dirty), slog.Int("unsettled", unsettled), slog.Uint64("left_undone", left),
			slog.Bool("reconciliation_needed", reconcile), slog.Bool("journaled", s.journal != nil && jerr == nil))
	}
	if jerr != nil {
		jerr = fmt.Errorf("dualwrite: close could not commit the settle journal (%d dirty, %d unsettled keys): %w", dirty, unsettled, jerr)
	}
	if cause != nil {
		return errors.Join(fmt.Errorf("dualwrite: close gave up draining with %d operations undone (%d dirty keys): %w", left, dirty, cause), jerr)
	}
	return jerr
}

// shutdown stops intake, drains the lanes until ctx ends, then aborts, and
// stops every goroutine; it returns ctx's error if it had to abort.
func (s *Store) shutdown(ctx context.Context) error {
	s.gate.Lock()
	s.closed.Store(true)
	s.gate.Unlock()

	close(s.stopping)
	drained := make(chan struct{})
	go func() { s.workers.Wait(); close(drained) }()
	var cause error
	select {
	case <-drained:
	case <-ctx.Done():
		cause = ctx.Err()
		s.aborted.Store(true)
		s.unpace()
		for _, l := range s.lanes {
			l.abort()
		}
		<-drained
	}
	close(s.quit)
	s.bgCancel()
	s.unpace()
	s.background.Wait()
	return cause
}

// DirtyKeys returns the keys whose copy in the other store may be wrong, in
// byte order. They are user data: keep them out of logs.
func (s *Store) DirtyKeys() []string { return s.set.list(MarkDirty) }

// UnsettledKeys returns the keys whose copy was sent to the other store and
// not yet verified, in byte order; user data, as DirtyKeys'.
func (s *Store) UnsettledKeys() []string { return s.set.list(MarkUnsettled) }

// AcknowledgeReconciliationAt clears the flag that the settle set
// overflowed, once a full reconciliation (shadow-report's repair) has run,
// only if no key overflowed since Stats reported DirtyOverflow as overflow,
// and reports whether it did: a reconciliation that started before a later
// overflow does not cover the keys that overflow lost.
func (s *Store) AcknowledgeReconciliationAt(overflow uint64) bool {
	cleared, commit := s.set.acknowledge(overflow)
	if commit {
		s.kickCommit()
	}
	return cleared
}
