package dualwrite

import (
	"crypto/sha256"
	"hash/fnv"

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
	// window has passed since it was first seen.
	verdictWaiting
	// verdictConfirmed: the same difference has held for at least a
	// window, with no write of the key seen in between.
	verdictConfirmed
)

// judgeLocked applies the confirmation rule to e, which a read found to
// differ as d at now. Every write of the key clears e.held (markLocked),
// so a held difference is one that no write seen has touched. A
// difference held or waiting readies e at its start, so that the next
// pass reads it again a window after it was first seen.
func (d *settleSet) judgeLocked(e *settleEntry, tl *timeline, diff held, now, window int64) verdict {
	if e.held != nil && e.held.same(diff) {
		if now-e.held.since >= window {
			return verdictConfirmed
		}
		d.readyLocked(e, tl, e.held.since)
		return verdictWaiting
	}
	diff.since = now
	e.held = &diff
	d.readyLocked(e, tl, now)
	return verdictHeld
}
