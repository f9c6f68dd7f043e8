package otelkv

import (
	"context"

	"github.com/kvshadow/kvshadow/kv"
)

// The forwarding halves of the optional abilities. Each holds the *Store
// whose inner store has the ability; withAbilities embeds exactly those the
// inner store has, so a type assertion on the result answers as it would on
// the store itself.
type (
	entryGetter struct{ s *Store }
	bulkGetter  struct{ s *Store }
	bulkPutter  struct{ s *Store }
	bulkDeleter struct{ s *Store }
)

// GetEntry implements kv.ExpiryGetter.
func (a entryGetter) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	return a.s.getEntry(ctx, key)
}

// GetMany implements kv.BulkGetter.
func (a bulkGetter) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	return a.s.getMany(ctx, keys)
}

// PutMany implements kv.BulkPutter.
func (a bulkPutter) PutMany(ctx context.Context, entries []kv.Entry) error {
	return a.s.putMany(ctx, entries)
}

// DeleteMany implements kv.BulkDeleter.
func (a bulkDeleter) DeleteMany(ctx context.Context, keys []string) error {
	return a.s.deleteMany(ctx, keys)
}

const (
	hasEntry = 1 << iota
	hasBulkGet
	hasBulkPut
	hasBulkDelete
)

func (s *Store) withAbilities() kv.Store {
	var mask int
	if _, ok := s.inner.(kv.ExpiryGetter); ok {
		mask |= hasEntry
	}
	if _, ok := s.inner.(kv.BulkGetter); ok {
		mask |= hasBulkGet
	}
	if _, ok := s.inner.(kv.BulkPutter); ok {
		mask |= hasBulkPut
	}
	if _, ok := s.inner.(kv.BulkDeleter); ok {
		mask |= hasBulkDelete
	}
	e, g, p, d := entryGetter{s}, bulkGetter{s}, bulkPutter{s}, bulkDeleter{s}
	switch mask {
	case 0:
		return s
	case hasEntry:
		return struct {
			*Store
			entryGetter
		}{s, e}
	case hasBulkGet:
		return struct {
			*Store
			bulkGetter
		}{s, g}
	case hasEntry | hasBulkGet:
		return struct {
			*Store
			entryGetter
			bulkGetter
		}{s, e, g}
	case hasBulkPut:
		return struct {
			*Store
			bulkPutter
		}{s, p}
	case hasEntry | hasBulkPut:
		return struct {
			*Store
			entryGetter
			bulkPutter
		}{s, e, p}
	case hasBulkGet | hasBulkPut:
		return struct {
			*Store
			bulkGetter
			bulkPutter
		}{s, g, p}
	case hasEntry | hasBulkGet | hasBulkPut:
		return struct {
			*Store
			entryGetter
			bulkGetter
			bulkPutter
		}{s, e, g, p}
	case hasBulkDelete:
		return struct {
			*Store
			bulkDeleter
		}{s, d}
	case hasEntry | hasBulkDelete:
		return struct {
			*Store
			entryGetter
			bulkDeleter
		}{s, e, d}
	case hasBulkGet | hasBulkDelete:
		return struct {
			*Store
			bulkGetter
			bulkDeleter
		}{s, g, d}
	case hasEntry | hasBulkGet | hasBulkDelete:
		return struct {
			*Store
			entryGetter
			bulkGetter
			bulkDeleter
		}{s, e, g, d}
	case hasBulkPut | hasBulkDelete:
		return struct {
			*Store
			bulkPutter
			bulkDeleter
		}{s, p, d}
	case hasEntry | hasBulkPut | hasBulkDelete:
		return struct {
			*Store
			entryGetter
			bulkPutter
			bulkDeleter
		}{s, e, p, d}
	case hasBulkGet | hasBulkPut | hasBulkDelete:
		return struct {
			*Store
			bulkGetter
			bulkPutter
			bulkDeleter
		}{s, g, p, d}
	default:
		return struct {
			*Store
			entryGetter
			bulkGetter
			bulkPutter
			bulkDeleter
		}{s, e, g, p, d}
	}
}
