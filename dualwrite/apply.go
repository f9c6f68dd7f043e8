package dualwrite

import (
	"context"
	"errors"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// runWrite applies a write's copy to the other store.
func (s *Store) runWrite(l *lane, j *job) {
	start := s.clock.Now()
	done, err := s.breakers[j.target].allow(start)
	if err != nil {
		s.markDirty(j.key, start)
		s.dropped(j.ctx, j.op, j.target, DropBreakerOpen)
		return
	}
	ctx := s.asyncContext(j.ctx, j.op)
	var moved bool
	err = s.do(l, ctx, start, func(ctx context.Context) (err error) {
		moved, err = s.copyTo(ctx, j.target, j.key, j.value, j.exp, j.op == OpDelete)
		return err
	})
	done(err)
	end := s.clock.Now()
	s.slotOf(j.hash).touch(end)
	s.opDone(ctx, j, err, start, end)
	switch {
	case err != nil:
		s.markDirty(j.key, end)
		s.dropped(j.ctx, j.op, j.target, dropReasonOf(err))
	case moved:
		// The copy outlives the original (see copyExpiry): keep the key
		// dirty until the original has expired, so that comparisons say
		// Pending and repair then deletes the copy.
		s.markDirty(j.key, j.exp)
	}
}

// copyTo makes key's state in store r a put of value with exp, or a delete.
func (s *Store) copyTo(ctx context.Context, r Role, key string, value []byte, exp time.Time, del bool) (moved bool, err error) {
	defer s.recovered(r, &err)
	if !del {
		out, expired := exp, false
		if !exp.IsZero() {
			out, moved, expired = copyExpiry(exp, s.clock.Now())
		}
		if !expired {
			return moved, s.stores[r].Put(ctx, key, value, kv.PutOptions{Expiration: out})
		}
	}
	return false, s.stores[r].Delete(ctx, key)
}

func dropReasonOf(err error) DropReason {
	switch {
	case errors.Is(err, errTimeout):
		return DropTimeout
	case errors.Is(err, errAborted):
		return DropClosed
	case errors.Is(err, errBreakerOpen):
		return DropBreakerOpen
	}
	return DropShadowError
}

func (s *Store) markDirty(key string, ready time.Time) {
	if s.dirty.mark(key, ready) {
		s.overflowed()
	}
}

// opDone reports job j, which began at start and ended at end.
func (s *Store) opDone(ctx context.Context, j *job, err error, start, end time.Time) {
	e := OpEvent{Op: j.op, Role: j.target, Outcome: OutcomeOK, Duration: end.Sub(start), Waited: start.Sub(j.queued)}
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		e.Outcome, e.ErrorClass = OutcomeError, compare.ErrorClass(err)
		if errors.Is(err, errTimeout) {
			e.Outcome = OutcomeTimeout
		}
	}
	s.obs.OpDone(ctx, e)
}

// runCompare reads the other store after the key's earlier writes have
// reached it and classifies the two observations. A write that began since
// the caller's read makes the comparison inconclusive; a recent write or a
// dirty key makes a difference pending: the layer never reports a
// difference of its own making as a divergence.
func (s *Store) runCompare(l *lane, j *job) {
	c := j.cmp
	start := s.clock.Now()
	done, err := s.breakers[j.target].allow(start)
	if err != nil {
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(j.ctx, DropEvent{Op: OpCompare, Role: j.target, Reason: DropBreakerOpen})
		return
	}
	ctx := s.asyncContext(j.ctx, OpCompare)
	var e kv.Entry
	err = s.do(l, ctx, start, func(ctx context.Context) (err error) {
		e, err = s.get(ctx, j.target, j.key, c.expiry)
		return err
	})
	done(err)
	now := s.clock.Now()
	read := compare.Observation{Found: err == nil}
	switch {
	case err == nil:
		read.Value = e.Value
		if c.expiry {
			read.Expiration = e.Expiration
		}
	case !errors.Is(err, kv.ErrNotFound):
		read.Err = err
	}
	sl := s.slotOf(j.hash)
	primary, shadow := c.seen, read
	if j.target == RolePrimary {
		primary, shadow = read, c.seen
	}
	kind := compare.Classify(primary, shadow, compare.Options{
		Now:               now,
		LastWrite:         sl.lastWrite(),
		ConsistencyWindow: s.cfg.window,
		Raced:             c.seq&1 == 1 || sl.seq.Load() != c.seq,
		Dirty:             s.dirty.has(j.key),
	})
	s.ctr.compared(kind)
	s.obs.Compared(ctx, CompareEvent{Kind: kind, Namespace: kv.ModuleOf(j.key)})
	if kind.Divergent() {
		s.deliver(ctx, s.cfg.Redactor.Record(j.key, kind, primary, shadow, now))
	}
	s.opDone(ctx, j, err, start, now)
}

// leave accounts for a job that Close abandoned.
func (s *Store) leave(j *job) {
	switch j.op {
	case OpPut, OpDelete:
		s.ctr.leftAtClose.Add(1)
		s.markDirty(j.key, s.clock.Now())
		s.dropped(j.ctx, j.op, j.target, DropClosed)
	case OpRepair:
		s.ctr.leftAtClose.Add(1) // the key is still dirty
		s.dirty.unqueue(j.key)
	case OpCompare:
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(j.ctx, DropEvent{Op: OpCompare, Role: j.target, Reason: DropClosed})
	}
}
