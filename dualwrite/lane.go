package dualwrite

import (
	"context"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// lane is one FIFO of asynchronous operations and its worker. A key always
// hashes to the same lane, so the other store receives each key's writes in
// the order of the authoritative store.
type lane struct {
	ch chan job

	mu       sync.Mutex // guards the running operation's cancel and deadline
	cancel   context.CancelCauseFunc
	deadline int64 // unix ns
}

// job is one queued operation. It is passed by value: the lanes' buffers are
// allocated once, by New.
type job struct {
	op     Op
	target Role // the store the job reads or writes
	key    string
	hash   uint64
	value  []byte
	exp    time.Time
	size   int64 // bytes counted against MaxQueueBytes
	// queued is when the job was offered to its lane, from a clock reading
	// the enqueuing path made anyway; OpEvent.Waited is measured from it.
	queued time.Time
	// ctx is the caller's context, handed to Observer.AsyncContext when
	// the job runs; its cancellation is never used.
	ctx  context.Context
	cmp  *comparison
	gen  uint64        // repair: the dirty mark being repaired
	done chan struct{} // barrier: closed when the lane reaches it
}

// comparison is what a sampled read hands to its lane.
type comparison struct {
	seen   compare.Observation // what the caller's read returned
	seq    uint64              // the slot's sequence before that read
	expiry bool                // compare expiries (both stores report them)
}

// enqueue offers j to its lane without blocking.
func (s *Store) enqueue(j job) bool {
	if j.size > 0 && s.ctr.queuedBytes.Add(j.size) > s.cfg.MaxQueueBytes {
		s.ctr.queuedBytes.Add(-j.size)
		return false
	}
	s.ctr.queued.Add(1)
	select {
	case s.laneOf(j.hash).ch <- j:
		return true
	default:
		s.ctr.queued.Add(-1)
		s.ctr.queuedBytes.Add(-j.size)
		return false
	}
}

// asyncContext asks the Observer for the context of an operation started
// for caller, and strips the cancellation an Observer might have left on it:
// the caller's cancellation must never reach the other store.
func (s *Store) asyncContext(caller context.Context, op Op) context.Context {
	ctx := s.obs.AsyncContext(caller, op)
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	return ctx
}

func (s *Store) laneOf(h uint64) *lane { return s.lanes[h%uint64(len(s.lanes))] }

func (s *Store) slotOf(h uint64) *slot { return &s.slots[h&(1<<slotBits-1)] }

// work is a lane's worker: it runs jobs until Close, then drains the lane.
func (s *Store) work(l *lane) {
	defer s.workers.Done()
	for {
		select {
		case j := <-l.ch:
			s.run(l, &j)
		case <-s.stopping:
			for {
				select {
				case j := <-l.ch:
					s.run(l, &j)
				default:
					return
				}
			}
		}
	}
}

func (s *Store) run(l *lane, j *job) {
	if j.done != nil {
		// Uncount the barrier before releasing its waiter, who may read
		// Stats.Queued at once.
		s.ctr.queued.Add(-1)
		close(j.done)
		return
	}
	defer func() {
		s.ctr.queued.Add(-1)
		s.ctr.queuedBytes.Add(-j.size)
	}()
	switch {
	case s.aborted.Load():
		s.leave(j)
	case j.op == OpCompare:
		s.runCompare(l, j)
	case j.op == OpRepair:
		s.runRepair(l, j)
	default:
		s.runWrite(l, j)
	}
}

// do runs one store call, started at now, on lane l under ShadowTimeout,
// measured on the Store's clock by the watchdog, and under Close's abort.
func (s *Store) do(l *lane, parent context.Context, now time.Time, call func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	l.mu.Lock()
	l.cancel, l.deadline = cancel, now.Add(s.cfg.ShadowTimeout).UnixNano()
	l.mu.Unlock()
	s.watch.started()
	if s.aborted.Load() {
		cancel(errAborted)
	}
	err := call(ctx)
	l.mu.Lock()
	l.cancel = nil
	l.mu.Unlock()
	if err != nil {
		if cause := context.Cause(ctx); cause == errTimeout || cause == errAborted {
			return cause
		}
	}
	return err
}

// abort cancels the lane's running operation.
func (l *lane) abort() {
	l.mu.Lock()
	c := l.cancel
	l.cancel = nil
	l.mu.Unlock()
	if c != nil {
		c(errAborted)
	}
}
