package dualwrite

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// lane is one FIFO of asynchronous operations and its worker; a key
// always hashes to the same lane.
type lane struct {
	// ch holds pointers, so that a queued job costs the channel a word
	// and a coalesced copy is replaced in place (see enqueueCopy).
	ch chan *job

	// qmu guards waiting: the copies queued and not yet started, by key,
	// and their content. A newer write of a key replaces its copy's
	// content there instead of queuing behind it, keeping that copy's
	// place in the FIFO.
	qmu     sync.Mutex
	waiting map[string]*job
	// backlog holds, in order, the jobs admitted past ch's room: copies of
	// a bulk write, which wait for room rather than being dropped (see
	// enqueueCopy), and barriers offered behind them. While it holds any,
	// every job for the lane joins it or is refused, so the lane stays one
	// FIFO; the worker moves its head into ch each time it takes a job.
	// Guarded by qmu; parked mirrors its length for the paths without qmu.
	backlog []*job
	parked  atomic.Int32

	// mu guards the running operation's cancel and deadline.
	mu       sync.Mutex
	cancel   context.CancelCauseFunc
	deadline int64 // unix ns
}

func newLane(depth int) *lane {
	return &lane{ch: make(chan *job, depth), waiting: make(map[string]*job)}
}

// job is one queued operation.
type job struct {
	// write is the copy's write; a comparison or a repair has its op, key,
	// hash and at (when the job was offered to its lane, from a clock
	// reading the enqueuing path made anyway) alone.
	write
	target Role  // the store the job reads or writes
	size   int64 // bytes counted against MaxQueueBytes
	// ctx is the caller's context, handed to Observer.AsyncContext when
	// the job runs; its cancellation is never used.
	ctx context.Context
	// waits is set on a copy in its lane's waiting until it starts: till
	// then its content (its write but key, hash and at, and size, ctx)
	// is guarded by the lane's qmu, since a newer write of its key
	// may replace it.
	waits bool
	cmp   *comparison
	gen   uint64        // repair: the settle mark being repaired
	free  bool          // repair: its pass may delete without asking (deleteGate)
	done  chan struct{} // barrier: closed when the lane reaches it
}

// queued returns a copy of j to be queued, so that the enqueuing paths' j
// stays on their stack (&j there escapes: an allocation a Put more).
func queued(j job) *job { return &j }

// coalescing is off only in the benchmark that measures what it saves.
var coalescing = true

// comparison is what a sampled read hands to its lane.
type comparison struct {
	seen   compare.Observation // what the caller's read returned
	seq    uint64              // the slot's sequence before that read
	expiry bool                // compare expiries (both stores report them)
	meta   bool                // compare metadata (both stores keep it)
	// tee is set for a read made elsewhere (CompareReads): seen.Value is
	// then a digest (see digestOf), and the other store's value is turned
	// into one before they are compared.
	tee bool
	// raced is set when the read was made before the key's latest write.
	raced bool
	// sum and length are the tee's digest of the value it read, which
	// the confirmation rule compares with the stores' values.
	sum    [32]byte
	length int
}

// enqueue offers j to its lane without blocking. A lane with a backlog
// is full.
func (s *Store) enqueue(j job) bool {
	l := s.laneOf(j.hash)
	if l.parked.Load() > 0 || !s.reserveBytes(j.size) {
		return false
	}
	s.ctr.queued.Add(1)
	q := queued(j)
	select {
	case l.ch <- q:
		return true
	default:
		s.ctr.queued.Add(-1)
		s.releaseBytes(j.size)
		return false
	}
}

func (s *Store) reserveBytes(n int64) bool {
	if n <= 0 {
		return true
	}
	if s.ctr.queuedBytes.Add(n) > s.cfg.MaxQueueBytes {
		s.ctr.queuedBytes.Add(-n)
		return false
	}
	if s.cfg.Memory != nil && !s.cfg.Memory.TryAcquire(n) {
		s.ctr.queuedBytes.Add(-n)
		return false
	}
	return true
}

func (s *Store) releaseBytes(n int64) {
	if n <= 0 {
		return
	}
	s.ctr.queuedBytes.Add(-n)
	if s.cfg.Memory != nil {
		s.cfg.Memory.Release(n)
	}
}

// mirror enqueues the copy of w, made at w.at, or says why it cannot.
// fresh reports that a new copy was queued rather than a waiting one
// replaced.
func (s *Store) mirror(ctx context.Context, target Role, w *write, park bool) (_ DropReason, fresh bool) {
	if s.breakers[target].isOpen(w.at) {
		return DropBreakerOpen, false
	}
	j := job{write: *w, target: target, ctx: ctx}
	j.value, j.md = nil, nil
	if w.op == OpPut {
		// The caller may reuse its buffers once the call returns; an
		// empty value is a value.
		j.value, j.md, j.size = append([]byte{}, w.value...), bytes.Clone(w.md), int64(len(w.value))
	}
	ok, fresh := s.enqueueCopy(j, park)
	if !ok {
		return DropLaneFull, false
	}
	return "", fresh
}

// enqueueCopy offers the copy of a write to its lane without blocking: a
// newer write replaces its key's waiting copy (an older ingested one is
// ignored), and a bulk write's copy (park) that finds its lane full waits
// in the backlog (MaxBacklog). fresh reports that a new copy was queued.
func (s *Store) enqueueCopy(j job, park bool) (ok, fresh bool) {
	l := s.laneOf(j.hash)
	l.qmu.Lock()
	if c := l.waiting[j.key]; c != nil && (coalescing || len(l.backlog) > 0) {
		// With a backlog the copy cannot queue behind the waiting one
		// anyway: replacing it keeps the key's order.
		defer l.qmu.Unlock()
		if !j.acked.IsZero() && c.acked.After(j.acked) {
			s.ctr.ingestStale.Add(1)
			return true, false
		}
		delta := j.size - c.size
		if !s.reserveBytes(delta) {
			return false, false
		}
		if delta < 0 {
			s.releaseBytes(-delta)
		}
		// The waiting copy has not started (qmu): its old value is read
		// by no one.
		c.op, c.value, c.exp, c.md, c.acked = j.op, j.value, j.exp, j.md, j.acked
		c.size, c.ctx = j.size, j.ctx
		s.ctr.coalesced.Add(1)
		return true, false
	}
	if !s.reserveBytes(j.size) {
		l.qmu.Unlock()
		return false, false
	}
	j.waits = true
	q := queued(j)
	s.ctr.queued.Add(1)
	if len(l.backlog) == 0 {
		select {
		case l.ch <- q:
			l.waiting[j.key] = q
			l.qmu.Unlock()
			return true, true
		default:
		}
	}
	switch {
	case park && s.ctr.backlog.Add(1) <= int64(s.cfg.MaxBacklog):
		l.backlog = append(l.backlog, q)
		l.parked.Add(1)
		l.waiting[j.key] = q
		l.qmu.Unlock()
		return true, true
	case park:
		s.ctr.backlog.Add(-1)
	}
	l.qmu.Unlock()
	s.ctr.queued.Add(-1)
	s.releaseBytes(j.size)
	return false, false
}

// refill moves the head of the backlog into ch while it has room.
func (s *Store) refill(l *lane) {
	if l.parked.Load() == 0 {
		return
	}
	l.qmu.Lock()
	defer l.qmu.Unlock()
	n := 0
loop:
	for ; n < len(l.backlog); n++ {
		select {
		case l.ch <- l.backlog[n]:
		default:
			break loop
		}
	}
	if n == 0 {
		return
	}
	rest := copy(l.backlog, l.backlog[n:])
	clear(l.backlog[rest:])
	l.backlog = l.backlog[:rest]
	l.parked.Add(-int32(n))
	s.ctr.backlog.Add(-int64(n))
}

// sendBarrier queues barrier j at the end of lane l, behind its backlog
// when it has one, else waiting for room in ch.
func (s *Store) sendBarrier(ctx context.Context, l *lane, j job) error {
	q := queued(j)
	l.qmu.Lock()
	if len(l.backlog) > 0 {
		l.backlog = append(l.backlog, q)
		l.parked.Add(1)
		s.ctr.backlog.Add(1)
		l.qmu.Unlock()
		return nil
	}
	l.qmu.Unlock()
	select {
	case l.ch <- q:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopping:
		// Closing: the workers drain and stop, and a barrier offered now
		// might never be reached.
		return errClosed
	}
}

// take removes a copy from its lane's waiting as it starts: from here on a
// newer write queues a copy of its own, and the copy's content is the
// worker's alone.
func (l *lane) take(j *job) {
	l.qmu.Lock()
	if l.waiting[j.key] == j {
		delete(l.waiting, j.key)
	}
	j.waits = false
	l.qmu.Unlock()
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
		// A lane with work queued takes it without the select below,
		// which locks both channels for every job.
		select {
		case j := <-l.ch:
			s.refill(l)
			s.run(l, j)
			continue
		default:
		}
		select {
		case j := <-l.ch:
			s.refill(l)
			s.run(l, j)
		case <-s.stopping:
			for {
				s.refill(l)
				select {
				case j := <-l.ch:
					s.run(l, j)
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
	if j.waits {
		l.take(j)
	}
	defer func() {
		s.ctr.queued.Add(-1)
		s.releaseBytes(j.size)
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

// do runs one store call, started at now, on lane l under its timeout
// (see timeout), measured on the Store's clock by the watchdog, and under
// Close's abort, in a context of its own that either cancels with its
// cause. bytes is what the call carries or may return.
func (s *Store) do(l *lane, parent context.Context, now time.Time, bytes int64, call func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	deadline := now.Add(s.timeout(bytes)).UnixNano()
	l.mu.Lock()
	l.cancel, l.deadline = cancel, deadline
	l.mu.Unlock()
	s.watch.started(deadline)
	if s.aborted.Load() {
		l.abort()
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

// timeout is what an operation that carries bytes of values may take:
// ShadowTimeout and a second a ShadowThroughput of bytes, so that a large
// copy to a loaded store is not cut short where a small one would not be.
func (s *Store) timeout(bytes int64) time.Duration {
	return s.cfg.ShadowTimeout + time.Duration(max(bytes, 0)/s.cfg.ShadowThroughput)*time.Second
}

func (l *lane) abort() {
	l.mu.Lock()
	c := l.claimLocked()
	l.mu.Unlock()
	if c != nil {
		c(errAborted)
	}
}

// claimLocked takes the running operation's cancel func, for the caller to
// call once l.mu is released; the operation may end, and the next one
// start, before it is called, which cancels only the operation's own
// context.
func (l *lane) claimLocked() context.CancelCauseFunc {
	c := l.cancel
	l.cancel = nil
	return c
}
