package kv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MaxMetadataSize is the most bytes a key's metadata may take, serialized:
// Workers KV's limit.
const MaxMetadataSize = 1024

// MetadataStore is a Store that keeps Workers KV's per-key metadata: one JSON
// value beside the value, written and replaced with it. The bot never uses
// metadata; REST clients (wrangler, the SDKs) do, and a proxy must keep it.
//
// A MetadataStore's GetEntry, and its GetMany when it has one, return each
// key's metadata in Entry.Metadata (nil when the key has none); its PutMany
// stores Entry.Metadata. Put stores a value with no metadata, clearing any
// the key had, as a Workers KV write without metadata does.
//
// A store that is not a MetadataStore refuses an entry that carries
// metadata (ErrMetadataUnsupported) rather than dropping it: PutEntry below
// and every BulkPutter check it.
type MetadataStore interface {
	ExpiryGetter
	// PutEntry stores e.Value under e.Key with e.Expiration (zero: none)
	// and e.Metadata (nil: none), replacing all three.
	PutEntry(ctx context.Context, e Entry) error
	// GetValue returns the key's value and expiry without its metadata
	// (Entry.Metadata is nil), or ErrNotFound: what a Workers KV value GET
	// returns in one request, where GetEntry needs the metadata too.
	GetValue(ctx context.Context, key string) (Entry, error)
	// GetMetadata returns the key's metadata alone (nil for none), or
	// ErrNotFound: Workers KV's metadata GET, one request with no value.
	GetMetadata(ctx context.Context, key string) (json.RawMessage, error)
}

// GetValueEntry reads a key's value and its expiry when the store can tell
// it, by the cheapest call the store has: a MetadataStore's GetValue, an
// ExpiryGetter's GetEntry, else Get (no expiry). Metadata is never read.
func GetValueEntry(ctx context.Context, s Store, key string) (Entry, error) {
	switch g := s.(type) {
	case MetadataStore:
		return g.GetValue(ctx, key)
	case ExpiryGetter:
		return g.GetEntry(ctx, key)
	}
	v, err := s.Get(ctx, key)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Key: key, Value: v}, nil
}

// ErrMetadataUnsupported: an entry with metadata was given to a store that
// does not keep metadata. It matches errors.ErrUnsupported too.
var ErrMetadataUnsupported = fmt.Errorf("kv: this store keeps no metadata: %w", errors.ErrUnsupported)

// ValidateMetadata checks a key's metadata: nil (none), or one valid JSON
// value of at most MaxMetadataSize bytes once compacted, as Workers KV
// counts the metadata it serializes.
func ValidateMetadata(md json.RawMessage) error {
	if md == nil {
		return nil
	}
	if !json.Valid(md) {
		return fmt.Errorf("%w: metadata is not one valid JSON value", ErrInvalidMetadata)
	}
	if n := len(NormalizeMetadata(md)); n > MaxMetadataSize {
		return fmt.Errorf("%w: metadata is %d bytes compacted, the limit is %d", ErrInvalidMetadata, n, MaxMetadataSize)
	}
	return nil
}

// NormalizeMetadata returns valid metadata (see ValidateMetadata) in the
// one form every store keeps and returns, so that a key written through
// any store reads back the same from all of them: compacted JSON in a
// buffer of its own, and nil for none, JSON null included (Workers KV
// reports null metadata as none).
func NormalizeMetadata(md json.RawMessage) json.RawMessage {
	if md == nil {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, md) != nil || buf.String() == "null" {
		return nil
	}
	return buf.Bytes()
}

// ValidateEntry checks all the inputs of a PutEntry made at now.
func ValidateEntry(e Entry, now time.Time) error {
	if err := ValidatePut(e.Key, e.Value, PutOptions{Expiration: e.Expiration}, now); err != nil {
		return err
	}
	return ValidateMetadata(e.Metadata)
}

// PutEntry writes e to s: through s's PutEntry when s keeps metadata, else
// as a Put, refusing with ErrMetadataUnsupported an entry whose metadata s
// would drop.
func PutEntry(ctx context.Context, s Store, e Entry) error {
	if s == nil {
		return fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	if ms, ok := s.(MetadataStore); ok {
		return ms.PutEntry(ctx, e)
	}
	if e.Metadata != nil {
		return ErrMetadataUnsupported
	}
	return s.Put(ctx, e.Key, e.Value, PutOptions{Expiration: e.Expiration})
}
