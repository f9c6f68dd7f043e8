package dualwrite

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// hashKey is 64-bit FNV-1a: stable across processes, so that every process
// samples the same keys and a key's lane does not depend on a random seed.
func hashKey(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h
}

// mix is splitmix64's finalizer: sampling must not correlate with the low
// bits that choose lanes and slots.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// sampleThreshold turns a rate into the bound that mix(hash)>>11 (a uniform
// 53-bit number) must stay under.
func sampleThreshold(rate float64) uint64 {
	if rate >= 1 {
		return math.MaxUint64
	}
	return uint64(rate * (1 << 53))
}

func sampled(h, threshold uint64) bool {
	return threshold == math.MaxUint64 || mix(h)>>11 < threshold
}

// slotBits sizes the table of slots: 4096 slots of 24 bytes. Keys that share
// a slot share its lock and sequence, which can delay one key's write behind
// another's or turn a comparison inconclusive, never report a difference
// that is not there.
const slotBits = 12

// slot orders the writes of its keys and lets comparisons see them.
type slot struct {
	// mu is held by a write from before its authoritative write until its
	// copy is enqueued, so that the lane receives a key's writes in the
	// order the authoritative store applied them. It is the only lock held
	// across a store call; nothing else happens under it.
	mu sync.Mutex
	// seq is odd while a write holds mu, and changes with every write: a
	// comparison that saw it odd, or changed, raced a write.
	seq atomic.Uint64
	// last is the time (unix ns) either store was last written for the
	// slot's keys; within the consistency window of it a difference is
	// Pending and repair waits.
	last atomic.Int64
}

// touch records a write at now, keeping the latest time.
func (s *slot) touch(now time.Time) {
	n := now.UnixNano()
	for {
		old := s.last.Load()
		if old >= n || s.last.CompareAndSwap(old, n) {
			return
		}
	}
}

// lastWrite returns the time of the slot's last write, zero if none.
func (s *slot) lastWrite() time.Time { return timeOf(s.last.Load()) }
