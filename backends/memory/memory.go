package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// Config configures a Store. The zero value is a store on the system clock.
type Config struct {
	// Clock drives expiry; nil means the system clock.
	Clock clock.Clock
}

// Store is the in-memory kv.Store. Expired keys are invisible to every
// operation; their memory is reclaimed by a sweep (see sweepEvery).
type Store struct {
	clock clock.Clock

	mu      sync.RWMutex
	data    map[string]item
	keys    sortedKeys // holds exactly the keys of data
	writes  int        // since the last sweep of expired keys
	sweepAt int        // the keys the last sweep left: see sweepEvery
}

// sweepEvery is the fewest writes between sweeps of expired keys, and the
// fewest keys a store holds before it sweeps at all. A sweep waits for as
// many writes as the last one left keys, and at least sweepEvery: its cost
// is then at most two steps a write (O(1) amortized at any size), and a store
// full of TTL keys never holds more than twice the keys its last sweep left,
// and sweepEvery more.
const sweepEvery = 4096

type item struct {
	value []byte
	exp   time.Time       // zero: no expiry
	md    json.RawMessage // nil: no metadata
}

// entry returns it as key's kv.Entry, with copies of its bytes.
func (it item) entry(key string) kv.Entry {
	return kv.Entry{Key: key, Value: bytes.Clone(it.value), Expiration: it.exp, Metadata: bytes.Clone(it.md)}
}

// newItem copies what e holds into an item; an absent value is stored
// empty, since a key always has a value.
func newItem(e kv.Entry) item {
	v := bytes.Clone(e.Value)
	if v == nil {
		v = []byte{}
	}
	return item{value: v, exp: e.Expiration, md: kv.NormalizeMetadata(e.Metadata)}
}

func (it item) live(now time.Time) bool { return it.exp.IsZero() || now.Before(it.exp) }

var (
	_ kv.Store         = (*Store)(nil)
	_ kv.ExpiryGetter  = (*Store)(nil)
	_ kv.BulkGetter    = (*Store)(nil)
	_ kv.BulkPutter    = (*Store)(nil)
	_ kv.BulkDeleter   = (*Store)(nil)
	_ kv.MetadataStore = (*Store)(nil)
)

// New returns an empty Store.
func New(cfg Config) *Store {
	return &Store{clock: clock.OrReal(cfg.Clock), data: make(map[string]item)}
}

// Get implements kv.Store.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := s.GetEntry(ctx, key)
	return e.Value, err
}

// GetEntry implements kv.ExpiryGetter and returns the key's metadata too.
func (s *Store) GetEntry(ctx context.Context, key string) (kv.Entry, error) {
	if err := kv.ValidateKey(key); err != nil {
		return kv.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return kv.Entry{}, err
	}
	now := s.clock.Now()
	s.mu.RLock()
	it, ok := s.data[key]
	s.mu.RUnlock()
	if !ok || !it.live(now) {
		return kv.Entry{}, kv.ErrNotFound
	}
	return it.entry(key), nil
}

// GetValue implements kv.MetadataStore: GetEntry without the metadata.
func (s *Store) GetValue(ctx context.Context, key string) (kv.Entry, error) {
	e, err := s.GetEntry(ctx, key)
	e.Metadata = nil
	return e, err
}

// GetMetadata implements kv.MetadataStore: GetEntry's metadata.
func (s *Store) GetMetadata(ctx context.Context, key string) (json.RawMessage, error) {
	e, err := s.GetEntry(ctx, key)
	return e.Metadata, err
}

// Put implements kv.Store; it clears any metadata the key had.
func (s *Store) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	now := s.clock.Now()
	if err := kv.ValidatePut(key, value, opts, now); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.set(key, newItem(kv.Entry{Value: value, Expiration: opts.ExpiresAt(now)}))
	s.mu.Unlock()
	return nil
}

// PutEntry implements kv.MetadataStore.
func (s *Store) PutEntry(ctx context.Context, e kv.Entry) error {
	if err := kv.ValidateEntry(e, s.clock.Now()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.set(e.Key, newItem(e))
	s.mu.Unlock()
	return nil
}

// set stores it under key; s.mu must be held.
func (s *Store) set(key string, it item) {
	if s.writes++; s.writes >= max(sweepEvery, s.sweepAt) && len(s.data) >= sweepEvery {
		s.sweep(s.clock.Now())
	}
	if _, ok := s.data[key]; !ok {
		s.keys.insert(key)
	}
	s.data[key] = it
}

// remove deletes key; s.mu must be held.
func (s *Store) remove(key string) {
	if _, ok := s.data[key]; !ok {
		return
	}
	delete(s.data, key)
	s.keys.remove(key)
}

// sweep removes the expired keys; s.mu must be held.
func (s *Store) sweep(now time.Time) {
	s.writes = 0
	s.keys.retain(func(k string) bool {
		if s.data[k].live(now) {
			return true
		}
		delete(s.data, k)
		return false
	})
	s.sweepAt = len(s.data)
}

// Delete implements kv.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := kv.ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.remove(key)
	s.mu.Unlock()
	return nil
}

// List implements kv.Store. Its cursor is kv.EncodeCursor of the last key
// returned.
func (s *Store) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	limit, err := kv.ValidateListOptions(opts)
	if err != nil {
		return kv.ListResult{}, err
	}
	after, err := kv.DecodeCursor(opts.Cursor, opts.Prefix)
	if err != nil {
		return kv.ListResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return kv.ListResult{}, err
	}
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	start, past := opts.Prefix, false
	if after != "" && after >= opts.Prefix {
		start, past = after, true // resume past the cursor's key
	}
	p := s.keys.seek(start, past)
	res := kv.ListResult{Keys: []string{}, Info: []kv.KeyInfo{}}
	for ; ; p = s.keys.next(p) {
		k, ok := s.keys.at(p)
		if !ok || len(k) < len(opts.Prefix) || k[:len(opts.Prefix)] != opts.Prefix {
			break
		}
		if !s.data[k].live(now) {
			continue
		}
		if len(res.Keys) == limit {
			res.Cursor = kv.EncodeCursor(res.Keys[len(res.Keys)-1])
			return res, nil
		}
		it := s.data[k]
		res.Keys = append(res.Keys, k)
		res.Info = append(res.Info, kv.KeyInfo{Expiration: it.exp, Metadata: bytes.Clone(it.md)})
	}
	res.Done = true
	return res, nil
}

// GetMany implements kv.BulkGetter.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	if err := kv.ValidateKeys(keys); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	out := make([]kv.Entry, 0, len(keys))
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range keys {
		if it, ok := s.data[k]; ok && it.live(now) {
			out = append(out, it.entry(k))
		}
	}
	return out, nil
}

// PutMany implements kv.BulkPutter, storing each entry's metadata.
func (s *Store) PutMany(ctx context.Context, entries []kv.Entry) error {
	now := s.clock.Now()
	if err := kv.ValidateEntries(entries, now); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		s.set(e.Key, newItem(e))
	}
	return nil
}

// DeleteMany implements kv.BulkDeleter.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	if err := kv.ValidateKeys(keys); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.remove(k)
	}
	return nil
}

// Len returns the number of live keys; tests use it to check bounds.
func (s *Store) Len() int {
	now := s.clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, it := range s.data {
		if it.live(now) {
			n++
		}
	}
	return n
}
