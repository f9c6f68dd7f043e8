package metricbatch

import "sync"

// Size is how many measurements a Batch holds before Add records them.
const Size = 64

// Batch holds measurements of type T. Its zero value is empty and ready.
type Batch[T any] struct {
	mu    sync.Mutex
	held  []T
	spare []T // a recorded batch's slice, for reuse
}

// Add holds v. When v fills the batch, Add calls record with it, with no
// lock held, and keeps its slice for a next batch: record must not keep it.
func (b *Batch[T]) Add(v T, record func([]T)) {
	b.mu.Lock()
	if b.held == nil {
		b.held = b.fresh()
	}
	b.held = append(b.held, v)
	b.unlockRecording(len(b.held) >= Size, record)
}

// Flush calls record with what the batch holds, if anything, as Add does
// with a full one: from the meter's callback, before a collection.
func (b *Batch[T]) Flush(record func([]T)) {
	b.mu.Lock()
	b.unlockRecording(len(b.held) > 0, record)
}

// unlockRecording, called with mu held, releases it; when due, it first
// takes the held batch, then records it unlocked.
func (b *Batch[T]) unlockRecording(due bool, record func([]T)) {
	if !due {
		b.mu.Unlock()
		return
	}
	full := b.held
	b.held = b.fresh()
	b.mu.Unlock()
	b.record(full, record)
}

// record hands s to record, then keeps it for reuse.
func (b *Batch[T]) record(s []T, record func([]T)) {
	record(s)
	clear(s) // measurements may hold pointers: let them go
	b.mu.Lock()
	if b.spare == nil {
		b.spare = s[:0]
	}
	b.mu.Unlock()
}

// fresh is an empty slice for the batch: the spare one, else a new one.
// Called with mu held.
func (b *Batch[T]) fresh() []T {
	if s := b.spare; s != nil {
		b.spare = nil
		return s
	}
	return make([]T, 0, Size)
}
