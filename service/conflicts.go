package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// conflictQueue bounds the conflicts waiting for the ledger; one that finds
// it full is logged, counted and not recorded.
const conflictQueue = 1024

// conflictRate is how many conflicts without a kept side a minute the
// recorder records for a Workers KV namespace; past it they are logged and
// counted as not recorded, so that copies from one client cannot push the
// records kept before out of the ledger (MaxConflictRecords). Those whose
// side was kept are recorded whatever the rate: keeping is bounded by its
// own (keep.Config.Rate), and a kept side must be named.
const conflictRate = 600

// conflictRecorder records late copies' conflicts in the control ledger,
// beside the stage document, where every instance lists every instance's
// and a restart loses none; each store's Sink (sink) hands it its
// conflicts. Its goroutine records them, so that an ingest does not wait
// for MongoDB once more, but one whose losing side was kept (its ingest
// waited for MongoDB already) at once; Start begins the goroutine and Close
// ends it, after the stores are closed.
type conflictRecorder struct {
	ledger   control.ConflictLedger
	instance string
	timeout  time.Duration
	log      *slog.Logger

	queue   chan control.ConflictRecord
	bg      context.Context // the records' parent; Close cancels it at its deadline
	abort   context.CancelFunc
	quit    chan struct{}
	done    chan struct{}
	mu      sync.Mutex // guards closing, and orders queuing before it
	closing bool
	dropped atomic.Uint64 // queue full, or closing
	failed  atomic.Uint64 // the ledger refused, or could not be reached
	unkept  atomic.Uint64 // their losing side could not be kept (KeepError)
	warned  atomic.Bool

	rate    int         // conflictRate; 0: no bound
	clock   clock.Clock // of the rate
	rateMu  sync.Mutex
	buckets map[string]*bucket // by Workers KV namespace ID
}

// bucket is a namespace's records of the last minute: tokens refill at
// rate a minute, up to rate.
type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes a record of namespace id from its bucket, or reports that
// the minute has none left.
func (r *conflictRecorder) allow(id string) bool {
	if r.rate <= 0 {
		return true
	}
	now := r.clock.Now()
	r.rateMu.Lock()
	defer r.rateMu.Unlock()
	b := r.buckets[id]
	if b == nil {
		b = &bucket{tokens: float64(r.rate), last: now}
		r.buckets[id] = b
	}
	if now.After(b.last) {
		b.tokens = min(float64(r.rate), b.tokens+now.Sub(b.last).Minutes()*float64(r.rate))
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func newConflictRecorder(ledger control.ConflictLedger, instance string, log *slog.Logger) *conflictRecorder {
	r := &conflictRecorder{ledger: ledger, instance: instance,
		timeout: control.DefaultBoardTimeout, log: log, rate: conflictRate, clock: clock.OrReal(nil), buckets: map[string]*bucket{},
		queue: make(chan control.ConflictRecord, conflictQueue), quit: make(chan struct{}), done: make(chan struct{})}
	r.bg, r.abort = context.WithCancel(context.Background())
	return r
}

// sink is the Sink of the store of Workers KV namespace id: divergences
// and conflicts logged on the store's log as dualwrite.LogSink logs them,
// and conflicts recorded.
func (r *conflictRecorder) sink(id string, log *slog.Logger) dualwrite.Sink {
	return recordingSink{LogSink: dualwrite.LogSink{Logger: log}, r: r, id: id}
}

type recordingSink struct {
	dualwrite.LogSink // its Divergence, and the log line of each Conflict
	r                 *conflictRecorder
	id                string // the Workers KV namespace ID
}

var _ dualwrite.ConflictSink = recordingSink{}

// Conflict implements dualwrite.ConflictSink: logged at once, recorded by
// the recorder's goroutine; one whose losing side was kept is recorded at
// once, before the tee's batch is answered (its ingest has waited for
// MongoDB already, to keep it), so that a crash cannot leave a kept side
// that no record names. Should that fail, the goroutine tries again.
func (s recordingSink) Conflict(ctx context.Context, c dualwrite.Conflict) {
	s.LogSink.Conflict(ctx, c)
	if c.KeepError != "" {
		s.r.unkept.Add(1)
	}
	rec := control.ConflictRecord{ID: control.NewID(), Instance: s.r.instance, KVNamespace: s.id, Conflict: c}
	if c.Kept != "" && s.r.recordNow(ctx, rec) {
		return
	}
	if c.Kept == "" && !s.r.allow(s.id) {
		s.r.drop(fmt.Sprintf("more than %d conflicts a minute for the namespace", s.r.rate))
		return
	}
	s.r.add(rec)
}

// recordNow records rec within the Board's timeout, whatever becomes of
// ctx, unless the recorder is closing; false when it did not.
func (r *conflictRecorder) recordNow(ctx context.Context, rec control.ConflictRecord) bool {
	r.mu.Lock()
	closing := r.closing
	r.mu.Unlock()
	if closing {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	return r.ledger.RecordConflict(ctx, rec) == nil
}

// add queues rec for the ledger, or counts it as not recorded.
func (r *conflictRecorder) add(rec control.ConflictRecord) {
	// Under mu, so that nothing is queued once Close has begun: the
	// goroutine's last drain would not see it.
	why := ""
	r.mu.Lock()
	switch {
	case r.closing:
		why = "the proxy is stopping"
	default:
		select {
		case r.queue <- rec:
		default:
			why = "the queue to the control ledger is full"
		}
	}
	r.mu.Unlock()
	if why != "" {
		r.drop(why)
	}
}

func (r *conflictRecorder) drop(why string) {
	r.dropped.Add(1)
	r.warn("kvshadow-proxy: a late copy's conflict was logged but not recorded in the control ledger: " + why)
}

// warn logs the first failure to record; the counts say how many since.
func (r *conflictRecorder) warn(msg string, attrs ...slog.Attr) {
	if r.warned.CompareAndSwap(false, true) {
		r.log.LogAttrs(context.Background(), slog.LevelWarn, msg+" (later failures are counted, not logged)", attrs...)
	}
}

// Start begins recording.
func (r *conflictRecorder) Start() { go r.run() }

func (r *conflictRecorder) run() {
	defer close(r.done)
	for {
		select {
		case rec := <-r.queue:
			r.record(rec)
		case <-r.quit:
			for {
				select {
				case rec := <-r.queue:
					r.record(rec)
				default:
					return
				}
			}
		}
	}
}

func (r *conflictRecorder) record(rec control.ConflictRecord) {
	ctx, cancel := context.WithTimeout(r.bg, r.timeout)
	defer cancel()
	// ErrConflict: its ID is taken, by this very record (IDs are random),
	// which recordNow wrote though its answer was lost.
	if err := r.ledger.RecordConflict(ctx, rec); err != nil && !errors.Is(err, control.ErrConflict) {
		r.failed.Add(1)
		r.warn("kvshadow-proxy: a late copy's conflict was logged but could not be recorded in the control ledger",
			slog.String("error", err.Error()))
	}
}

// Close records what is queued, each within the Board's timeout, until
// ctx ends, and stops; what is left then counts as not recorded.
func (r *conflictRecorder) Close(ctx context.Context) {
	r.mu.Lock()
	if !r.closing {
		r.closing = true
		close(r.quit)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		r.abort()
		<-r.done
	}
	r.abort()
}

// Unrecorded is how many conflicts were logged and not recorded.
func (r *conflictRecorder) Unrecorded() uint64 { return r.dropped.Load() + r.failed.Load() }

// startConflictRecorder starts a recorder into ledger when it keeps
// conflicts; nil when it does not.
func startConflictRecorder(ledger control.Ledger, instance string, log *slog.Logger) *conflictRecorder {
	cl, ok := ledger.(control.ConflictLedger)
	if !ok {
		return nil
	}
	r := newConflictRecorder(cl, instance, log)
	r.Start()
	return r
}
