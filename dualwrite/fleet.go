package dualwrite

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// Fleet is what a Store learns of the other instances, each with a Store of
// its own over the same two stores (package control's Fleet, from their
// heartbeats). See Confirmation in the package doc.
type Fleet interface {
	// Watermark returns a time before which no other live instance has a
	// write on its way to the other store: each published, with a
	// heartbeat made since, a Watermark of its own Store past it. The
	// zero time while nothing is known (the Store then confirms nothing).
	Watermark(ctx context.Context) time.Time
	// Claim records that this instance reports the difference named by
	// id, unless another instance did within hold: first is false then,
	// and the difference is not reported twice. An error leaves it to be
	// reported (better twice than never).
	Claim(ctx context.Context, id [32]byte, hold time.Duration) (first bool, err error)
}

// Watermark returns the low watermark that this Store publishes to the
// other instances: the time of the oldest write it knows may not have
// reached the other store yet (a copy queued or running, counted from
// before the authoritative write; a dirty key; a key recovered from the
// journal and not verified yet), rounded down to 16.8 ms, or now when
// there is none. Every write that reached the authoritative store before
// it has reached the other store, or is one of those.
func (s *Store) Watermark() time.Time { return s.set.watermark(s.clock.Now) }

// fleetMark samples the fleet's watermark for a verification pass, before
// its reads: noFleet without a Fleet, 0 (confirm nothing) when unknown.
func (s *Store) fleetMark(ctx context.Context) int64 {
	if s.cfg.Fleet == nil {
		return noFleet
	}
	t := s.cfg.Fleet.Watermark(ctx)
	if t.IsZero() {
		return 0
	}
	return nanos(t)
}

// claimHold is how long, in consistency windows, a claim keeps another
// instance from reporting the same difference: long enough for the
// reporter's repair (a window after the confirmation at most), short
// enough that a difference that outlives it, or comes back, is reported
// again.
const claimHold = 4

// claim asks the Fleet whether this instance is the first to report the
// difference diff of key: its ID is a SHA-256 of the key and both sides'
// states, never the key itself.
func (s *Store) claim(ctx context.Context, key string, diff held) bool {
	if s.cfg.Fleet == nil {
		return true
	}
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	h.Write(n[:])
	h.Write([]byte(key))
	for _, st := range []state{diff.primary, diff.shadow} {
		var b [1 + 8 + 8 + 8]byte
		if st.found {
			b[0] = 1
		}
		binary.BigEndian.PutUint64(b[1:], uint64(st.length))
		binary.BigEndian.PutUint64(b[9:], uint64(st.exp))
		binary.BigEndian.PutUint64(b[17:], st.md)
		h.Write(b[:])
		h.Write(st.sum[:])
	}
	var id [32]byte
	h.Sum(id[:0])
	first, err := s.cfg.Fleet.Claim(ctx, id, claimHold*s.cfg.window)
	if err != nil {
		s.ctr.claimErrors.Add(1)
		return true
	}
	return first
}
