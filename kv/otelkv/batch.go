package otelkv

import (
	"context"
	"sync"
)

// batchSize is how many durations a store holds before it records them.
const batchSize = 64

// A duration is one operation's, waiting in a batch.
type duration struct {
	op      op
	outcome outcome
	seconds float64
}

// batch holds the durations of operations whose spans are not sampled
// until batchSize of them have ended, or the meter collects. Recording one
// into the SDK's histogram walks the SDK's attribute maps and buckets; in a
// proxy that sleeps between requests that memory has gone cold by the next
// one, so each record costs some microseconds where a batch of them costs
// that once. An operation whose span is sampled is recorded at once, with
// its context, so that the histogram's exemplars can link it.
type batch struct {
	mu    sync.Mutex
	held  []duration
	spare []duration // a recorded batch's slice, for reuse
}

// add holds d, and returns the batch to record when d filled it.
func (b *batch) add(d duration) []duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = b.fresh()
	}
	b.held = append(b.held, d)
	if len(b.held) < batchSize {
		return nil
	}
	full := b.held
	b.held = b.fresh()
	return full
}

// take returns what the batch holds, for the collection, and empties it.
func (b *batch) take() []duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) == 0 {
		return nil
	}
	full := b.held
	b.held = b.fresh()
	return full
}

// fresh is an empty slice for the batch: the spare one, else a new one.
// Called with mu held.
func (b *batch) fresh() []duration {
	if s := b.spare; s != nil {
		b.spare = nil
		return s
	}
	return make([]duration, 0, batchSize)
}

// recycle keeps a recorded batch's slice for the next one.
func (b *batch) recycle(s []duration) {
	b.mu.Lock()
	if b.spare == nil {
		b.spare = s[:0]
	}
	b.mu.Unlock()
}

// hold batches d, recording the batch when d filled it; the SDK is called
// with no lock held.
func (in *instruments) hold(d duration) {
	if full := in.batch.add(d); full != nil {
		in.flush(full)
	}
}

// flush records the durations ds into the histogram and recycles ds.
func (in *instruments) flush(ds []duration) {
	if ds == nil {
		return
	}
	for _, d := range ds {
		in.dur.Record(context.Background(), d.seconds, in.rec[d.op][d.outcome]...)
	}
	in.batch.recycle(ds)
}
