package compare

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Observation is what one store said about a key.
type Observation struct {
	// Found is false when the store reported the key missing.
	Found bool
	Value []byte
	// Expiration is the key's absolute expiry; zero means none or unknown.
	Expiration time.Time
	// Metadata is the key's Workers KV metadata, one JSON value; nil means
	// none, or a store that keeps no metadata (both sides then leave it
	// nil).
	Metadata json.RawMessage
	// Err is set when the store could not be read; Found and Value are
	// then meaningless.
	Err error
}

// DefaultTTLTolerance is how far apart two expiries may be and still match:
// Workers KV keeps whole seconds and the stores' clocks drift.
const DefaultTTLTolerance = 5 * time.Second

// Options tune a classification. The zero value compares with
// DefaultTTLTolerance and no consistency window.
type Options struct {
	// Now is the time of the comparison; zero disables the checks that need
	// it (pending, expired on one side).
	Now time.Time
	// TTLTolerance is the largest expiry difference that still matches;
	// zero means DefaultTTLTolerance, negative means exact.
	TTLTolerance time.Duration
	// LastWrite is when the key was last written through the dual-write
	// store, if known; with ConsistencyWindow it marks differences as
	// Pending while the primary may still serve the old value.
	LastWrite         time.Time
	ConsistencyWindow time.Duration
	// Raced is set by a caller that saw a newer write of the key during the
	// comparison.
	Raced bool
	// Dirty is set by a caller that knows one store missed a write of the
	// key that a repair has yet to copy: a difference is then Pending, the
	// known lag of a copy under way, not news.
	Dirty bool
}

func (o Options) tolerance() time.Duration {
	switch {
	case o.TTLTolerance == 0:
		return DefaultTTLTolerance
	case o.TTLTolerance < 0:
		return 0
	}
	return o.TTLTolerance
}

// Classify compares the primary's and the shadow's observation of one key.
func Classify(primary, shadow Observation, opts Options) Kind {
	switch {
	case opts.Raced:
		return Inconclusive
	case primary.Err != nil:
		return PrimaryError
	case shadow.Err != nil:
		return ShadowError
	}
	kind := classifyData(primary, shadow, opts)
	if kind != Match && (inWindow(opts) || opts.Dirty) {
		return Pending
	}
	return kind
}

func inWindow(o Options) bool {
	return !o.LastWrite.IsZero() && !o.Now.IsZero() && o.Now.Sub(o.LastWrite) < o.ConsistencyWindow
}

func classifyData(p, s Observation, o Options) Kind {
	tol := o.tolerance()
	switch {
	case !p.Found && !s.Found:
		return Match
	case p.Found && !s.Found:
		if expiringBy(p, o.Now, tol) {
			return ExpiredOnOneSide
		}
		return MissingInShadow
	case !p.Found && s.Found:
		if expiringBy(s, o.Now, tol) {
			return ExpiredOnOneSide
		}
		return ExtraInShadow
	}
	if !bytes.Equal(p.Value, s.Value) {
		if JSONEqual(p.Value, s.Value) {
			return JSONEquivalent
		}
		return ValueMismatch
	}
	if !ExpiryMatch(p.Expiration, s.Expiration, tol) {
		return TTLMismatch
	}
	if !MetadataEqual(p.Metadata, s.Metadata) {
		return MetadataMismatch
	}
	return Match
}

// expiringBy reports whether o's key expires within tol of now: the other
// side may simply have dropped it a moment earlier.
func expiringBy(o Observation, now time.Time, tol time.Duration) bool {
	return !now.IsZero() && !o.Expiration.IsZero() && o.Expiration.Sub(now) <= tol
}

// ExpiryMatch reports whether two expiries agree within tol; zero means none.
func ExpiryMatch(a, b time.Time, tol time.Duration) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	d := a.Sub(b)
	return -tol <= d && d <= tol
}

// MetadataEqual reports whether two keys' metadata agree: both absent, or
// the same JSON (member order and spelling of numbers aside).
func MetadataEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return (a == nil) == (b == nil)
	}
	return bytes.Equal(a, b) || JSONEqual(a, b)
}

// JSONEqual reports whether a and b are both valid JSON documents with the
// same meaning: object member order, insignificant whitespace and number
// spelling (1, 1.0, 1e0) do not count.
func JSONEqual(a, b []byte) bool {
	va, ok := decodeJSON(a)
	if !ok {
		return false
	}
	vb, ok := decodeJSON(b)
	if !ok {
		return false
	}
	return jsonValueEqual(va, vb)
}

func decodeJSON(raw []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data after the document
	}
	return v, true
}

func jsonValueEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && maps.EqualFunc(x, y, jsonValueEqual)
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonValueEqual)
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(x, y)
	default: // string, bool, nil
		return a == b
	}
}

func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	// big.Rat would allocate a number with the exponent's digits: stored
	// values are untrusted, so huge exponents compare by spelling only.
	if hugeExponent(string(a)) || hugeExponent(string(b)) {
		return false
	}
	ra, ok1 := new(big.Rat).SetString(string(a))
	rb, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && ra.Cmp(rb) == 0
}

func hugeExponent(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || exp > 1000 || exp < -1000
}
