package kv

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the contract every backend keeps. Implementations are safe for
// concurrent use.
//
// The bytes passed in are the caller's and those returned are the
// caller's: a write (Put, PutEntry, PutMany) must not modify a value or
// its metadata, nor keep either once it returns, since the caller may
// reuse the buffer at once; a read must not return bytes the store will
// change.
type Store interface {
	// Get returns the value of key, or an error matching ErrNotFound when
	// the key is missing or expired.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key. Without an expiry in opts it clears any
	// expiry the key had.
	Put(ctx context.Context, key string, value []byte, opts PutOptions) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns one page of keys in UTF-8 byte order.
	List(ctx context.Context, opts ListOptions) (ListResult, error)
}

// PutOptions carries the optional expiry of a Put. At most one of TTL and
// Expiration may be set; the zero value means "no expiry".
type PutOptions struct {
	// TTL is the time to live from now, at least MinTTL. Backends keep
	// whole seconds, as Workers KV does.
	TTL time.Duration
	// Expiration is an absolute expiry, at least MinTTL in the future. It is
	// what a repair or backfill uses to copy a key with the expiry it has.
	Expiration time.Time
}

// HasExpiry reports whether the options set an expiry.
func (o PutOptions) HasExpiry() bool { return o.TTL != 0 || !o.Expiration.IsZero() }

// ExpiresAt returns the absolute expiry the options ask for, relative to now,
// or the zero time when they set none.
func (o PutOptions) ExpiresAt(now time.Time) time.Time {
	switch {
	case o.TTL != 0:
		return now.Add(o.TTL.Truncate(time.Second))
	case !o.Expiration.IsZero():
		return o.Expiration
	}
	return time.Time{}
}

// ListOptions selects a page of keys.
type ListOptions struct {
	// Prefix restricts the page to keys that start with it.
	Prefix string
	// Limit is the most keys the page may hold, 1..MaxListLimit; 0 means
	// DefaultListLimit.
	Limit int
	// Cursor continues a previous listing with the same Prefix; empty starts
	// from the beginning.
	Cursor string
}

// ListResult is one page of a listing.
type ListResult struct {
	// Keys are in UTF-8 byte order. A page may be short, even empty, before
	// the listing is done.
	Keys []string
	// Cursor continues the listing; it is empty when Done.
	Cursor string
	// Done reports that no key follows this page.
	Done bool
	// Info is each listed key's expiry and metadata, Info[i] for Keys[i],
	// from a store that lists them with the keys as Workers KV does (one
	// request, no value read); nil from a store that does not, whose caller
	// reads them itself (GetMany, GetEntry) when it needs them.
	Info []KeyInfo
}

// KeyInfo is what a listing tells of a key besides its name: its expiry
// (zero for none) and, from a MetadataStore, its metadata (nil for none).
type KeyInfo struct {
	Expiration time.Time
	Metadata   json.RawMessage
}

// Entry is one key with its value and expiry, as the bulk abilities and
// expiry-aware reads carry it.
type Entry struct {
	Key   string
	Value []byte
	// Expiration is the absolute expiry; zero means none.
	Expiration time.Time
	// Metadata is the key's Workers KV metadata, one JSON value; nil means
	// none. Only a MetadataStore reads or writes it.
	Metadata json.RawMessage
}

// ExpiryGetter is a Store that can also return a key's expiry in the same
// read. Repair and the parity report use it to copy and compare expiries.
type ExpiryGetter interface {
	// GetEntry returns the key's value and expiry, or ErrNotFound.
	GetEntry(ctx context.Context, key string) (Entry, error)
}

// BulkGetter reads many keys at once. Missing keys are absent from the
// result; the order of the result is unspecified.
type BulkGetter interface {
	GetMany(ctx context.Context, keys []string) ([]Entry, error)
}

// BulkPutter writes many entries at once, each with its absolute Expiration
// (zero for none) and, when the store is a MetadataStore, its Metadata (a
// store that is not one refuses an entry with metadata with
// ErrMetadataUnsupported). Implementations split the batch into the
// backend's own request limits.
type BulkPutter interface {
	PutMany(ctx context.Context, entries []Entry) error
}

// BulkDeleter deletes many keys at once; missing keys are not an error.
type BulkDeleter interface {
	DeleteMany(ctx context.Context, keys []string) error
}
