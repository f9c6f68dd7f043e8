package metricbatch

import "sync"

// Size is how many measurements a Batch holds before Add returns them.
const Size = 64

// Batch holds measurements of type T. Its zero value is empty and ready.
type Batch[T any] struct {
	mu    sync.Mutex
	held  []T
	spare []T // a recorded batch's slice, for reuse
}

// Add holds v, and returns the batch to record when v filled it; record it
// with no lock held, then give it back with Recycle.
func (b *Batch[T]) Add(v T) []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = b.fresh()
	}
	b.held = append(b.held, v)
	if len(b.held) < Size {
		return nil
	}
	full := b.held
	b.held = b.fresh()
	return full
}

// Take returns what the batch holds, nil when nothing, and empties it.
func (b *Batch[T]) Take() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.held) == 0 {
		return nil
	}
	full := b.held
	b.held = b.fresh()
	return full
}

// Recycle keeps a recorded batch's slice for a next one. The caller no
// longer reads it.
func (b *Batch[T]) Recycle(s []T) {
	if s == nil {
		return
	}
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
