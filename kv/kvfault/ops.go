package kvfault

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvshadow/kvshadow/kv"
)

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.read(ctx, key, func(ctx context.Context) (kv.Entry, error) {
		v, err := s.inner.Get(ctx, key)
		return kv.Entry{Key: key, Value: v}, err
	})
	return e.Value, err
}

// GetEntry implements kv.ExpiryGetter when the wrapped store does; otherwise
// it returns ErrUnsupported.
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	eg, ok := s.inner.(kv.ExpiryGetter)
	if !ok {
		return kv.Entry{}, ErrUnsupported
	}
	return s.read(ctx, key, func(ctx context.Context) (kv.Entry, error) { return eg.GetEntry(ctx, key) })
}

func (s *Store) read(ctx context.Context, key string, get func(context.Context) (kv.Entry, error)) (kv.Entry, error) {
	s.reads.Add(1)
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	p, err := s.begin(ctx, true)
	if err != nil {
		return kv.Entry{}, err
	}
	defer s.end(p)
	if p.stale {
		if e, found, ok := s.staleEntry(key); ok {
			s.stale.Add(1)
			if !found {
				return kv.Entry{}, kv.ErrNotFound
			}
			return e, nil
		}
	}
	return get(ctx)
}

// write makes one write call (invalid: its input's refusal) with the faults
// of any write, and remembers the versions of the keys a call the wrapped
// store accepted wrote.
func (s *Store) write(ctx context.Context, invalid error, call func(context.Context) error, versions []version) error {
	s.writes.Add(1)
	if invalid != nil {
		return invalid
	}
	p, err := s.begin(ctx, false)
	if err != nil {
		return err
	}
	defer s.end(p)
	if err := call(ctx); err != nil {
		return err
	}
	for _, v := range versions {
		v.entry = cloneEntry(v.entry)
		s.remember(v.entry.Key, v)
	}
	return nil
}

// puts and deletes are the versions write remembers of the keys written.
func puts(entries ...kv.Entry) []version {
	out := make([]version, len(entries))
	for i, e := range entries {
		out[i] = version{found: true, entry: e}
	}
	return out
}

func deletes(keys ...string) []version {
	out := make([]version, len(keys))
	for i, k := range keys {
		out[i] = version{entry: kv.Entry{Key: k}}
	}
	return out
}

// Put implements kv.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	now := s.clock.Now()
	put := func(ctx context.Context) error { return s.inner.Put(ctx, key, value, opts) }
	return s.write(ctx, kv.ValidatePut(key, value, opts, now), put, puts(kv.Entry{Key: key, Value: value, Expiration: opts.ExpiresAt(now)}))
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	del := func(ctx context.Context) error { return s.inner.Delete(ctx, key) }
	return s.write(ctx, kv.ValidateKey(key), del, deletes(key))
}

// List implements kv.Store. Listings are never stale.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	s.lists.Add(1)
	if _, err := kv.ValidateListOptions(opts); err != nil {
		return kv.ListResult{}, err
	}
	p, err := s.begin(ctx, false)
	if err != nil {
		return kv.ListResult{}, err
	}
	defer s.end(p)
	return s.inner.List(ctx, opts)
}

// GetMany implements kv.BulkGetter when the wrapped store does. The whole
// call shares one latency and one failure draw; with a stale draw, every key
// the wrapper saw written is answered with its older value.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	bg, ok := s.inner.(kv.BulkGetter)
	if !ok {
		return nil, ErrUnsupported
	}
	s.reads.Add(1)
	if err := kv.ValidateKeys(keys); err != nil {
		return nil, err
	}
	p, err := s.begin(ctx, true)
	if err != nil {
		return nil, err
	}
	defer s.end(p)
	got, err := bg.GetMany(ctx, keys)
	if err == nil && s.bulk > 0 {
		n := 0
		for _, e := range got {
			n += len(e.Value) + len(e.Metadata)
		}
		if n > s.bulk {
			return nil, fmt.Errorf("kvfault: %d bytes of values asked at once, the limit is %d: %w", n, s.bulk, kv.ErrTooLarge)
		}
	}
	if err != nil || !p.stale {
		return got, err
	}
	out := got[:0]
	byKey := make(map[string]kv.Entry, len(got))
	for _, e := range got {
		byKey[e.Key] = e
	}
	for _, k := range keys {
		e, found, seen := s.staleEntry(k)
		if !seen {
			e, found = byKey[k]
		} else {
			s.stale.Add(1)
		}
		if found {
			e.Key = k
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *Store) getValue(ctx context.Context, key string) (kv.Entry, error) {
	e, err := s.read(ctx, key, func(ctx context.Context) (kv.Entry, error) {
		return s.inner.(kv.MetadataStore).GetValue(ctx, key)
	})
	e.Metadata = nil // a stale read serves a whole remembered entry
	return e, err
}

func (s *Store) getMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	e, err := s.read(ctx, key, func(ctx context.Context) (kv.Entry, error) {
		md, err := s.inner.(kv.MetadataStore).GetMetadata(ctx, key)
		return kv.Entry{Key: key, Metadata: md}, err
	})
	return e.Metadata, err
}

// putEntry writes e through the wrapped store's kv.MetadataStore. Only the
// store Exact returns has it, exactly when the wrapped store does.
func (s *Store) putEntry(ctx context.Context, e kv.Entry) error {
	put := func(ctx context.Context) error { return s.inner.(kv.MetadataStore).PutEntry(ctx, e) }
	return s.write(ctx, kv.ValidateEntry(e, s.clock.Now()), put, puts(e))
}

func cloneEntry(e kv.Entry) kv.Entry {
	e.Value = append([]byte{}, e.Value...)
	if e.Metadata != nil {
		e.Metadata = append(json.RawMessage{}, e.Metadata...)
	}
	return e
}

// PutMany implements kv.BulkPutter when the wrapped store does. *Store keeps
// no metadata, so it refuses entries with metadata
// (kv.ErrMetadataUnsupported); the store Exact returns passes them on.
func (s *Store) PutMany(ctx context.Context, entries []kv.Entry) error {
	for _, e := range entries {
		if e.Metadata != nil {
			return kv.ErrMetadataUnsupported
		}
	}
	return s.putMany(ctx, entries)
}

func (s *Store) putMany(ctx context.Context, entries []kv.Entry) error {
	bp, ok := s.inner.(kv.BulkPutter)
	if !ok {
		return ErrUnsupported
	}
	put := func(ctx context.Context) error { return bp.PutMany(ctx, entries) }
	return s.write(ctx, kv.ValidateEntries(entries, s.clock.Now()), put, puts(entries...))
}

// DeleteMany implements kv.BulkDeleter when the wrapped store does.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	bd, ok := s.inner.(kv.BulkDeleter)
	if !ok {
		return ErrUnsupported
	}
	del := func(ctx context.Context) error { return bd.DeleteMany(ctx, keys) }
	return s.write(ctx, kv.ValidateKeys(keys), del, deletes(keys...))
}
