package dualwrite

import (
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// The expiry both stores get is one absolute time in whole seconds, computed
// once from the caller's TTL: Workers KV keeps whole seconds, and a store
// that turned the TTL into a time by its own clock would end a few
// milliseconds, or a second, away from the other.

// expiryMargin keeps a fresh expiry this far beyond the 60 s minimum: the
// authoritative store checks the minimum again by its own, later, clock.
const expiryMargin = time.Second

// copySlack is how far beyond the minimum an expiry must still be when its
// copy is written; nearer, the copy is clamped (see copyExpiry).
const copySlack = 200 * time.Millisecond

// expiryFor returns the absolute expiry of a Put made at now with opts, zero
// for none. It rounds up to a whole second, and an expiry within
// expiryMargin of the minimum is moved just past it: a 60 s TTL lives 61 to
// 62 s.
func expiryFor(opts kv.PutOptions, now time.Time) time.Time {
	exp := opts.ExpiresAt(now)
	if exp.IsZero() {
		return exp
	}
	if floor := now.Add(kv.MinTTL + expiryMargin); exp.Before(floor) {
		exp = floor
	}
	exp = ceilSecond(exp)
	if exp.Sub(now) > kv.MaxTTL {
		exp = exp.Add(-time.Second)
	}
	return exp
}

func ceilSecond(t time.Time) time.Time {
	if c := t.Truncate(time.Second); !c.Equal(t) {
		return c.Add(time.Second)
	}
	return t
}

// copyExpiry returns the expiry with which a copy written at now can carry
// exp. The contract refuses expiries nearer than the 60 s minimum, so a copy
// made late (a slow lane, a repair of a key about to expire) is clamped to
// just past the minimum and outlives the original by a little; moved reports
// it. Expired reports that the original has already expired: the copy must
// be a delete.
func copyExpiry(exp, now time.Time) (out time.Time, moved, expired bool) {
	switch {
	case exp.IsZero():
		return exp, false, false
	case !now.Before(exp):
		return time.Time{}, false, true
	case exp.Sub(now) >= kv.MinTTL+copySlack:
		return exp, false, false
	}
	return ceilSecond(now.Add(kv.MinTTL + expiryMargin)), true, false
}
