package dualwrite

import (
	"crypto/sha256"
	"hash/fnv"
	"math"
	"time"

	"github.com/kvshadow/kvshadow/compare"
)

// state is one store's state of a key, reduced to what the confirmation
// rule compares: present or not, a digest and the length of the value, the
// expiry in whole seconds (Workers KV keeps no finer) and a digest of the
// metadata. Two reads that return the same state saw the same write (or
// the same absence), so a state that did not change between them did not
// move.
type state struct {
	found  bool
	meta   bool // md is known: a tee's read carries no metadata
	length int
	exp    int64 // Unix seconds; 0 means none
	md     uint64
	sum    [32]byte
}

// keyStateOf reduces an observation to its state; sum is the SHA-256 of its
// value when the caller has it already (a tee's digest), nil to compute it.
func keyStateOf(o compare.Observation, sum *[32]byte, length int, meta bool) state {
	st := state{found: o.Found, meta: meta}
	if !o.Found {
		return st
	}
	if sum != nil {
		st.sum, st.length = *sum, length
	} else {
		st.sum, st.length = sha256.Sum256(o.Value), len(o.Value)
	}
	if !o.Expiration.IsZero() {
		st.exp = o.Expiration.Unix()
	}
	if meta && o.Metadata != nil {
		h := fnv.New64a()
		h.Write(o.Metadata)
		st.md = h.Sum64() | 1 // nonzero: some metadata
	}
	return st
}

func (a state) same(b state) bool {
	if a.found != b.found || a.length != b.length || a.exp != b.exp || a.sum != b.sum {
		return false
	}
	return !a.meta || !b.meta || a.md == b.md
}

// held is a difference between the stores that a read found, and since
// when (Unix ns): the difference the confirmation rule waits on.
type held struct {
	primary, shadow state
	since           int64
}

func (h *held) same(o held) bool { return h.primary.same(o.primary) && h.shadow.same(o.shadow) }

// verdict is what the confirmation rule makes of a difference just read.
type verdict uint8

const (
	// verdictRaced: the key was written (or left the set) since the read
	// began; the read says nothing.
	verdictRaced verdict = iota
	// verdictHeld: a difference first seen, or one that changed on either
	// side: the wait starts (again) now.
	verdictHeld
	// verdictWaiting: the same difference, seen again before a whole
	// window has passed since it was first seen, or before every other
	// instance's watermark passed that first sight.
	verdictWaiting
	// verdictConfirmed: the same difference has held for at least a
	// window, with no write of the key seen in between, and no instance of
	// the fleet had a copy of an older write on its way when it was first
	// seen.
	verdictConfirmed
	// verdictRecovered: a key loaded from the journal, not verified since
	// the restart, differs: its copy may have died with the process. It
	// becomes dirty and is repaired without a report.
	verdictRecovered
)

// rule is what judgeLocked needs besides the difference: the window a
// difference must hold for, and the fleet's watermark (Unix ns) sampled
// before the read, which its first sight must precede. The zero rule
// confirms nothing; noFleet stands for a Store without a Fleet.
type rule struct {
	window int64
	mark   int64
}

// noFleet is the watermark of a Store alone: no other instance's copy can
// be on its way.
const noFleet = math.MaxInt64

// judgeLocked applies the confirmation rule to e, which a read found to
// differ as d at now. Every write of the key clears e.held (markLocked),
// so a held difference is one that no write seen has touched. A
// difference held or waiting readies e at its start, so that the next
// pass reads it again a window after it was first seen.
func (d *settleSet) judgeLocked(e *settleEntry, tl *timeline, diff held, now int64, r rule) verdict {
	if e.held != nil && e.held.same(diff) {
		if now-e.held.since >= r.window && e.held.since < r.mark {
			return verdictConfirmed
		}
		d.readyLocked(e, tl, e.held.since)
		return verdictWaiting
	}
	diff.since = now
	d.setHeld(e, &diff)
	d.readyLocked(e, tl, now)
	return verdictHeld
}

// setHeld sets e's held difference, keeping the count of those held.
func (d *settleSet) setHeld(e *settleEntry, h *held) {
	switch {
	case e.held == nil && h != nil:
		d.held++
	case e.held != nil && h == nil:
		d.held--
	}
	e.held = h
}

// flightBucket is the granularity of the watermark, 2^24 ns (16.8 ms):
// a time in flight is counted in the bucket it falls in, and the
// watermark is the start of the oldest bucket, never later than the time.
const flightBucket = 1 << 24

// fly puts e in flight, or takes it out, as its state says. A key is in
// flight while this Store knows of a write of it that may not have reached
// the other store: a copy queued or running (a write's mark counts it
// before the authoritative store is written), a dirty key (its copy lost,
// repair pending), or a key recovered from the journal not yet verified.
// It counts from the oldest write it knows of then (the write's own time
// when known, else its ready time) and keeps that time while it stays in
// flight: newer writes that join it never make it younger.
func (d *settleSet) fly(e *settleEntry) {
	in := e.copies > 0 || e.mark == MarkDirty || e.recovered
	switch {
	case in && e.flight == 0:
		t := e.ready
		if e.wrote != 0 && e.wrote < t {
			t = e.wrote
		}
		e.flight = t&^(flightBucket-1) | 1 // nonzero even at the epoch
		d.flights[e.flight]++
	case !in && e.flight != 0:
		d.land(e)
	}
}

// land takes e out of flight.
func (d *settleSet) land(e *settleEntry) {
	if e.flight == 0 {
		return
	}
	if d.flights[e.flight]--; d.flights[e.flight] <= 0 {
		delete(d.flights, e.flight)
	}
	e.flight = 0
}

// watermark returns the oldest time in flight, or now (read under the
// lock: a write marked after it reaches the authoritative store after it)
// when nothing is. Its cost is one look at each bucket in flight.
func (d *settleSet) watermark(now func() time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.flights) == 0 {
		return now()
	}
	low := int64(math.MaxInt64)
	for b := range d.flights {
		low = min(low, b&^1)
	}
	return timeOf(low)
}

// heldNow returns the differences held now (on keys of the set and on
// suspects), and the keys recovered from the journal that a verification
// found different.
func (d *settleSet) heldNow() (held int, recovered uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held, d.recovered
}
