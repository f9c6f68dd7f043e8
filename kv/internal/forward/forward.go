package forward

import (
	"context"
	"encoding/json"

	"github.com/kvshadow/kvshadow/kv"
)

// Abilities are a wrapper's implementations of the optional abilities.
type Abilities struct {
	GetEntry func(ctx context.Context, key string) (kv.Entry, error)
	PutEntry func(ctx context.Context, e kv.Entry) error
	// GetValue and GetMetadata go with PutEntry: all three are kv.MetadataStore's.
	GetValue    func(ctx context.Context, key string) (kv.Entry, error)
	GetMetadata func(ctx context.Context, key string) (json.RawMessage, error)
	GetMany     func(ctx context.Context, keys []string) ([]kv.Entry, error)
	PutMany     func(ctx context.Context, entries []kv.Entry) error
	DeleteMany  func(ctx context.Context, keys []string) error
}

// Set is a set of optional abilities, as a type assertion finds them.
type Set int

// The abilities. Metadata implies the entry read (kv.MetadataStore embeds
// kv.ExpiryGetter), so Of reports a MetadataStore as Metadata alone.
const (
	Entry Set = 1 << iota
	Metadata
	BulkGet
	BulkPut
	BulkDelete
)

// internal names of the combinations.
const (
	hasEntry      = int(Entry)
	hasMetadata   = int(Metadata)
	hasBulkGet    = int(BulkGet)
	hasBulkPut    = int(BulkPut)
	hasBulkDelete = int(BulkDelete)
)

// Of returns the abilities s has.
func Of(s kv.Store) Set {
	var set Set
	if _, ok := s.(kv.MetadataStore); ok {
		set |= Metadata
	} else if _, ok := s.(kv.ExpiryGetter); ok {
		set |= Entry
	}
	if _, ok := s.(kv.BulkGetter); ok {
		set |= BulkGet
	}
	if _, ok := s.(kv.BulkPutter); ok {
		set |= BulkPut
	}
	if _, ok := s.(kv.BulkDeleter); ok {
		set |= BulkDelete
	}
	return set
}

// Compose returns store, a wrapper of inner, with those of a's abilities that
// inner has, and an Unwrap method that returns inner. a must set every
// function that inner's abilities need.
func Compose(store, inner kv.Store, a Abilities) kv.Store {
	return compose(int(Of(inner)), base{store, inner}, a)
}

// Restrict returns s with only those of its abilities that are in keep (a
// store with Metadata kept keeps its entry read too), for tests of wrappers
// over stores that lack some. Its Unwrap returns s.
func Restrict(s kv.Store, keep Set) kv.Store {
	set := Of(s)
	if set&Metadata != 0 {
		set |= Entry // a MetadataStore reads entries, with or without keeping metadata
	}
	set &= keep
	if set&Metadata != 0 {
		set &^= Entry // the metadata combinations carry the entry read
	}
	var a Abilities
	if e, ok := s.(kv.ExpiryGetter); ok {
		a.GetEntry = e.GetEntry
	}
	if m, ok := s.(kv.MetadataStore); ok {
		a.PutEntry, a.GetValue, a.GetMetadata = m.PutEntry, m.GetValue, m.GetMetadata
	}
	if g, ok := s.(kv.BulkGetter); ok {
		a.GetMany = g.GetMany
	}
	if p, ok := s.(kv.BulkPutter); ok {
		a.PutMany = p.PutMany
	}
	if d, ok := s.(kv.BulkDeleter); ok {
		a.DeleteMany = d.DeleteMany
	}
	return compose(int(set), base{s, s}, a)
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
		g func(context.Context, string) (kv.Entry, error)
		h func(context.Context, string) (json.RawMessage, error)
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

// GetValue implements kv.MetadataStore.
func (a putEntry) GetValue(ctx context.Context, key string) (kv.Entry, error) { return a.g(ctx, key) }

// GetMetadata implements kv.MetadataStore.
func (a putEntry) GetMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	return a.h(ctx, key)
}

// GetMany implements kv.BulkGetter.
func (a getMany) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	return a.f(ctx, keys)
}

// PutMany implements kv.BulkPutter.
func (a putMany) PutMany(ctx context.Context, entries []kv.Entry) error { return a.f(ctx, entries) }

// DeleteMany implements kv.BulkDeleter.
func (a deleteMany) DeleteMany(ctx context.Context, keys []string) error { return a.f(ctx, keys) }
