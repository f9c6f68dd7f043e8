package dualwrite

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TeeRead is a read of the primary made elsewhere (tee mode: the bot's
// Worker, through its binding), described without its value.
type TeeRead struct {
	Key string
	// Found is false when the read found no value; SHA256, Length and
	// Expiration are then zero.
	Found bool
	// SHA256 is the digest of the value read, Length its length in bytes.
	SHA256 [32]byte
	Length int
	// Expiration is the key's absolute expiry as the reader learned it;
	// zero means none.
	Expiration time.Time
	// At is when the read returned, on the reader's clock; required.
	At time.Time
}

// CompareReads compares reads of the primary made elsewhere (tee mode)
// with the shadow, as the package doc's Optional abilities (CompareReads)
// says, and returns how many it queued. Only the Shadow and Handover
// stages compare them (in Handover only an isolate on an older stage still
// sends digests); DualWrite, and any stage when CompareRate is zero,
// compare none and return 0; a stage where the primary is not
// authoritative or the shadow is not written returns ErrIngestStage.
// Inputs are checked before any is queued (ErrInvalidRead, or
// kv.ErrInvalidKey for a key).
func (s *Store) CompareReads(ctx context.Context, reads []TeeRead) (int, error) {
	for i, r := range reads {
		if err := validateTeeRead(r); err != nil {
			return 0, fmt.Errorf("read %d: %w", i, err)
		}
	}
	if s.closed.Load() {
		return 0, errClosed
	}
	st := s.Stage()
	switch {
	case !st.mirrors() || st.authority() != RolePrimary:
		return 0, ErrIngestStage
	case !st.compares() || s.threshold == 0:
		return 0, nil
	}
	n := 0
	for _, r := range reads {
		if s.excludedRead(r.Key) {
			continue
		}
		h := hashKey(r.Key)
		c := &comparison{seq: s.slotOf(h).seq.Load(), expiry: s.withExpiry, tee: true, sum: r.SHA256, length: r.Length}
		c.raced = r.At.Before(s.wroteAt(r.Key, h))
		c.seen.Found = r.Found
		if r.Found {
			c.seen.Value = digestOf(r.SHA256, r.Length)
			if c.expiry {
				c.seen.Expiration = r.Expiration
			}
		}
		s.ctr.teeReads.Add(1)
		if s.offerComparison(ctx, RoleShadow, r.Key, h, c) {
			n++
		}
	}
	return n, nil
}

// wroteAt is the time of key's latest write that the Store knows of: from
// the settle set, or else the latest write of its slot's keys.
func (s *Store) wroteAt(key string, h uint64) time.Time {
	if t, ok := s.set.wroteAt(key); ok {
		return t
	}
	return s.slotOf(h).lastWrite()
}

// digestOf is what a tee's comparison compares in place of a value: a
// text that no JSON document spells, so two digests compare only as bytes.
func digestOf(sum [32]byte, length int) []byte {
	b := make([]byte, 0, len("sha256:")+2*len(sum)+1+len("33554432"))
	b = hex.AppendEncode(append(b, "sha256:"...), sum[:])
	return strconv.AppendInt(append(b, ':'), int64(length), 10)
}

func validateTeeRead(r TeeRead) error {
	if err := kv.ValidateKey(r.Key); err != nil {
		return err
	}
	switch {
	case r.At.IsZero():
		return fmt.Errorf("%w: At is required", ErrInvalidRead)
	case !r.Found && (r.SHA256 != [32]byte{} || r.Length != 0 || !r.Expiration.IsZero()):
		return fmt.Errorf("%w: a read that found nothing has no digest, length or expiry", ErrInvalidRead)
	case r.Length < 0 || r.Length > kv.MaxValueSize:
		return fmt.Errorf("%w: length must be 0..%d", ErrInvalidRead, kv.MaxValueSize)
	}
	return nil
}
