package compare

import "slices"

// Kind is the outcome of comparing one key across the two stores.
type Kind string

// The kinds, as they appear in logs, metrics and reports.
const (
	// Match: both sides agree (or both lack the key).
	Match Kind = "match"
	// MissingInShadow: the primary has the key, the shadow does not.
	MissingInShadow Kind = "missing_in_shadow"
	// ExtraInShadow: the shadow has a key the primary does not.
	ExtraInShadow Kind = "extra_in_shadow"
	// ValueMismatch: both have the key with different values.
	ValueMismatch Kind = "value_mismatch"
	// JSONEquivalent: the values differ as bytes but are the same JSON.
	JSONEquivalent Kind = "json_equivalent"
	// TTLMismatch: same value, expiries further apart than the tolerance,
	// or an expiry on one side only.
	TTLMismatch Kind = "ttl_mismatch"
	// MetadataMismatch: same value and expiry, different Workers KV
	// metadata (or metadata on one side only).
	MetadataMismatch Kind = "metadata_mismatch"
	// ExpiredOnOneSide: one side has the key but it expires within the
	// tolerance, and the other has already dropped it: clocks, not data.
	ExpiredOnOneSide Kind = "expired_on_one_side"
	// PrimaryError: the primary could not be read, so nothing is known.
	PrimaryError Kind = "primary_error"
	// ShadowError: the shadow could not be read.
	ShadowError Kind = "shadow_error"
	// Pending: the sides differ but the key was written inside the
	// primary's consistency window, or a repair of it is under way; look
	// again later.
	Pending Kind = "pending"
	// Inconclusive: a newer write of the key raced the comparison.
	Inconclusive Kind = "inconclusive"
	// Suspected: a sampled read comparison found a difference outside
	// every window this process knows of. Another process's copy may
	// still be in flight, so it is not a divergence until a verification
	// read after the consistency window confirms it.
	Suspected Kind = "suspected"
)

// Kinds lists every kind in a stable order, for reports and dashboards.
var Kinds = []Kind{
	Match, MissingInShadow, ExtraInShadow, ValueMismatch, JSONEquivalent,
	TTLMismatch, ExpiredOnOneSide, PrimaryError, ShadowError, Pending, Inconclusive,
	MetadataMismatch, Suspected,
}

// Divergent reports whether the kind is a real difference in data that a
// repair would change. Errors, pending, inconclusive and expiry races are
// not: they say the comparison could not conclude.
func (k Kind) Divergent() bool {
	switch k {
	case MissingInShadow, ExtraInShadow, ValueMismatch, JSONEquivalent, TTLMismatch, MetadataMismatch:
		return true
	}
	return false
}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }
