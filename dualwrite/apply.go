package dualwrite

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// runWrite applies a write's copy to the other store.
func (s *Store) runWrite(l *lane, j *job) {
	s.pace(j.target)
	start := s.clock.Now()
	if s.cfg.copyLife > 0 && start.Sub(j.at) > s.cfg.copyLife {
		// Too late to land within the window of its write: dropped as
		// timed out, the key dirty for repair.
		s.copyEnded(j, start, true)
		s.dropped(j.ctx, j.op, j.target, DropTimeout)
		return
	}
	var ctx context.Context // the Observer's, once the breaker let the copy run
	var moved bool
	ran, err := s.breakers[j.target].run(start, func() error {
		ctx = s.asyncContext(j.ctx, j.op)
		return s.do(l, ctx, start, j.size, func(ctx context.Context) (err error) {
			moved, err = s.copyTo(ctx, j.target, &j.write)
			return err
		})
	})
	if !ran {
		s.copyEnded(j, start, true)
		s.dropped(j.ctx, j.op, j.target, DropBreakerOpen)
		return
	}
	end := s.clock.Now()
	s.slotOf(j.hash).touch(end)
	s.copyEnded(j, end, err != nil)
	s.opDone(ctx, j, err, start, end)
	switch {
	case err != nil:
		if errors.Is(err, errAborted) {
			s.ctr.leftAtClose.Add(1) // in flight when Close gave up
		}
		s.dropped(j.ctx, j.op, j.target, dropReasonOf(err))
	case moved:
		// The copy outlives the original (see copyExpiry): keep the key
		// dirty until the original has expired, so that comparisons say
		// Pending and repair then deletes the copy.
		s.markDirty(j.key, j.exp)
	}
}

// copyTo makes w's key's state in store r what w says: a put of its value
// with its expiry (see copyExpiry) and metadata, or a delete.
func (s *Store) copyTo(ctx context.Context, r Role, w *write) (moved bool, err error) {
	defer s.recovered(r, &err)
	if w.op != OpDelete {
		out, expired := w.exp, false
		if !w.exp.IsZero() {
			out, moved, expired = copyExpiry(w.exp, s.clock.Now())
		}
		if !expired {
			if w.md != nil {
				e := w.entry()
				e.Expiration = out
				return moved, kv.PutEntry(ctx, s.stores[r], e)
			}
			return moved, s.stores[r].Put(ctx, w.key, w.value, kv.PutOptions{Expiration: out})
		}
	}
	return false, s.stores[r].Delete(ctx, w.key)
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

// opDone reports job j, which began at start and ended at end.
func (s *Store) opDone(ctx context.Context, j *job, err error, start, end time.Time) {
	e := OpEvent{Op: j.op, Role: j.target, Outcome: OutcomeOK, Duration: end.Sub(start), Waited: start.Sub(j.at)}
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		e.Outcome, e.ErrorClass = OutcomeError, compare.ErrorClass(err)
		if errors.Is(err, errTimeout) {
			e.Outcome = OutcomeTimeout
		}
	}
	s.obs.OpDone(ctx, e)
}

// runCompare reads the other store after the key's earlier writes have
// reached it and classifies the two observations (a tee's read as
// digests); a difference is only suspected, and held (doc.go, The settle
// set).
func (s *Store) runCompare(l *lane, j *job) {
	c := j.cmp
	s.pace(j.target)
	start := s.clock.Now()
	var ctx context.Context // the Observer's, once the breaker let the read run
	var e kv.Entry
	ran, err := s.breakers[j.target].run(start, func() error {
		ctx = s.asyncContext(j.ctx, OpCompare)
		return s.do(l, ctx, start, int64(len(c.seen.Value)), func(ctx context.Context) (err error) {
			e, err = s.get(ctx, j.target, j.key, readFor(c.expiry, c.meta))
			return err
		})
	})
	if !ran {
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(j.ctx, DropEvent{Op: OpCompare, Role: j.target, Reason: DropBreakerOpen})
		return
	}
	now := s.clock.Now()
	read := observation(e, err, c.expiry, c.meta)
	var readSum [32]byte
	readLen := len(read.Value)
	if c.tee && read.Found {
		readSum = sha256.Sum256(read.Value)
		read.Value = digestOf(readSum, readLen)
	}
	sl := s.slotOf(j.hash)
	primary, shadow := c.seen, read
	if j.target == RolePrimary {
		primary, shadow = read, c.seen
	}
	last, dirty, tracked := s.set.lastWrite(j.key)
	if !tracked {
		last = sl.lastWrite()
	}
	kind := compare.Classify(primary, shadow, compare.Options{
		Now:               now,
		LastWrite:         last,
		ConsistencyWindow: s.cfg.window,
		Raced:             c.raced || c.seq&1 == 1 || sl.seq.Load() != c.seq,
		Dirty:             dirty,
	})
	if kind.Divergent() {
		kind = compare.Suspected
		diff := s.difference(primary, shadow, nil, 0)
		if c.tee { // the primary's side is the tee's digest, the shadow's its read
			diff = held{primary: keyStateOf(c.seen, &c.sum, c.length, false), shadow: keyStateOf(read, &readSum, readLen, false)}
		}
		s.set.suspect(j.key, diff, now)
	}
	s.ctr.compared(kind)
	s.obs.Compared(ctx, CompareEvent{Kind: kind, Namespace: kv.ModuleOf(j.key)})
	s.opDone(ctx, j, err, start, now)
}

// observation is what a read of a store said: e, or err.
func observation(e kv.Entry, err error, expiry, meta bool) compare.Observation {
	o := compare.Observation{Found: err == nil}
	switch {
	case err == nil:
		o.Value = e.Value
		if expiry {
			o.Expiration = e.Expiration
		}
		if meta {
			o.Metadata = e.Metadata
		}
	case !errors.Is(err, kv.ErrNotFound):
		o.Err = err
	}
	return o
}

// leave accounts for a job that Close abandoned.
func (s *Store) leave(j *job) {
	switch j.op {
	case OpPut, OpDelete:
		s.ctr.leftAtClose.Add(1)
		s.copyEnded(j, s.clock.Now(), true)
		s.dropped(j.ctx, j.op, j.target, DropClosed)
	case OpRepair:
		s.ctr.leftAtClose.Add(1) // the key is still dirty
		s.set.unqueue(j.key)
	case OpCompare:
		s.ctr.comparisonsSkipped.Add(1)
		s.obs.Dropped(j.ctx, DropEvent{Op: OpCompare, Role: j.target, Reason: DropClosed})
	}
}
