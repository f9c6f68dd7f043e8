// Package forward builds the store a wrapper returns: one that has exactly the
// optional abilities (kv.ExpiryGetter, kv.MetadataStore, the bulk ones) of the
// store it wraps, so that a type assertion on the wrapper answers as it would
// on the wrapped store. otelkv and kvfault share it.
package forward

import (
	"context"

	"github.com/kvshadow/kvshadow/kv"
)

// Abilities are a wrapper's implementations of the optional abilities.
type Abilities struct {
	GetEntry   func(ctx context.Context, key string) (kv.Entry, error)
	PutEntry   func(ctx context.Context, e kv.Entry) error
	GetMany    func(ctx context.Context, keys []string) ([]kv.Entry, error)
	PutMany    func(ctx context.Context, entries []kv.Entry) error
	DeleteMany func(ctx context.Context, keys []string) error
}

const (
	hasEntry = 1 << iota
	hasMetadata
	hasBulkGet
	hasBulkPut
	hasBulkDelete
)

// Compose returns store, a wrapper of inner, with those of a's abilities that
// inner has, and an Unwrap method that returns inner.
func Compose(store, inner kv.Store, a Abilities) kv.Store {
	var mask int
	if _, ok := inner.(kv.MetadataStore); ok {
		mask |= hasMetadata
	} else if _, ok := inner.(kv.ExpiryGetter); ok {
		mask |= hasEntry
	}
	if _, ok := inner.(kv.BulkGetter); ok {
		mask |= hasBulkGet
	}
	if _, ok := inner.(kv.BulkPutter); ok {
		mask |= hasBulkPut
	}
	if _, ok := inner.(kv.BulkDeleter); ok {
		mask |= hasBulkDelete
	}
	return compose(mask, base{store, inner}, getEntry{a.GetEntry}, putEntry{a.PutEntry}, getMany{a.GetMany}, putMany{a.PutMany}, deleteMany{a.DeleteMany})
}

// base is the wrapper's own store and the store it wraps.
type base struct {
	kv.Store
	inner kv.Store
}

// Unwrap returns the wrapped store.
func (b base) Unwrap() kv.Store { return b.inner }

type (
	getEntry struct {
		f func(context.Context, string) (kv.Entry, error)
	}
	putEntry struct {
		f func(context.Context, kv.Entry) error
	}
	getMany struct {
		f func(context.Context, []string) ([]kv.Entry, error)
	}
	putMany struct {
		f func(context.Context, []kv.Entry) error
	}
	deleteMany struct {
		f func(context.Context, []string) error
	}
)

// GetEntry implements kv.ExpiryGetter.
func (a getEntry) GetEntry(ctx context.Context, key string) (kv.Entry, error) { return a.f(ctx, key) }

// PutEntry implements kv.MetadataStore.
func (a putEntry) PutEntry(ctx context.Context, e kv.Entry) error { return a.f(ctx, e) }

// GetMany implements kv.BulkGetter.
func (a getMany) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	return a.f(ctx, keys)
}

// PutMany implements kv.BulkPutter.
func (a putMany) PutMany(ctx context.Context, entries []kv.Entry) error { return a.f(ctx, entries) }

// DeleteMany implements kv.BulkDeleter.
func (a deleteMany) DeleteMany(ctx context.Context, keys []string) error { return a.f(ctx, keys) }
