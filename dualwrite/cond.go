package dualwrite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
)

// ErrChanged: a conditional write (WriteIf) found its key holding other
// than it expected, and wrote nothing.
var ErrChanged = errors.New("dualwrite: the key does not hold what the conditional write expects")

// Fingerprint identifies what a key holds without holding it: whether it
// holds a value, the SHA-256 of the value and of its metadata (normalised,
// as the stores compare it) in hex, and its expiry in Unix seconds (0:
// none), so that a key written since, even back to the same value with
// another expiry, is told apart.
type Fingerprint struct {
	Found    bool   `json:"found"`
	Value    string `json:"value,omitempty"`
	Metadata string `json:"metadata,omitempty"`
	Expires  int64  `json:"expires,omitempty"`
}

// FingerprintOf is the fingerprint of an observation of a key (its Err
// aside).
func FingerprintOf(o compare.Observation) Fingerprint {
	if !o.Found {
		return Fingerprint{}
	}
	f := Fingerprint{Found: true, Value: sum(o.Value)}
	if md := kv.NormalizeMetadata(o.Metadata); md != nil {
		f.Metadata = sum(md)
	}
	if !o.Expiration.IsZero() {
		f.Expires = o.Expiration.Unix()
	}
	return f
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// WriteIf is a write made only if the authoritative store holds what
// expect fingerprints (nil: whatever it holds): e, or a deletion of e.Key
// when del is set. The key's lock is held from the read to the write, as
// every write of the key through the Store takes it, so no write through
// the Store comes between them. It returns the fingerprint of what the key
// held, as the Store reads it (the expiry when both stores report one, the
// metadata when both keep it); ErrChanged when that was not expect, with
// nothing written; else the write's result, as Put, PutEntry or Delete
// give it.
func (s *Store) WriteIf(ctx context.Context, e kv.Entry, del bool, expect *Fingerprint) (Fingerprint, error) {
	op, now := OpDelete, time.Time{}
	if !del {
		op, now = OpPut, s.expiryClock(0, e.Expiration)
		if err := kv.ValidateEntry(e, now); err != nil {
			return Fingerprint{}, err
		}
		if e.Metadata != nil && !s.metadata {
			return Fingerprint{}, errNoMetadata
		}
		e.Expiration = expiryFor(kv.PutOptions{Expiration: e.Expiration}, now)
	} else if err := kv.ValidateKey(e.Key); err != nil {
		return Fingerprint{}, err
	}
	var fp Fingerprint
	err := s.write(ctx, writeOf(op, e, 0), func(auth Role) error {
		held, err := s.get(ctx, auth, e.Key, readFor(s.withExpiry, s.metadata))
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		obs := compare.Observation{Found: err == nil, Value: held.Value, Metadata: held.Metadata}
		if s.withExpiry {
			obs.Expiration = held.Expiration
		}
		fp = FingerprintOf(obs)
		if expect != nil && fp != *expect {
			return ErrChanged
		}
		return nil
	})
	return fp, err
}
