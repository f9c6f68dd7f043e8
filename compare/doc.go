// Package compare classifies two observations of one key, one from the
// primary store (Workers KV) and one from the shadow (MongoDB), into the
// divergence kinds that the dual-write store and the parity report share,
// and redacts what it records: keys as a keyed HMAC by default, values only
// as digests (a keyed hash prefix and a length). It does no I/O.
//
// The roles are the stores' identities, not who is authoritative: in the
// live stage the shadow is authoritative, yet a key present only in the
// primary is still "missing_in_shadow".
package compare
