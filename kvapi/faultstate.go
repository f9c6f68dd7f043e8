package kvapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// writeInterval is Workers KV's per-key write rate: one write a second.
const writeInterval = time.Second

type nsKey struct{ ns, key string }

type writeLimiter struct {
	mu   sync.Mutex
	last bounded[nsKey, time.Time]
}

// allow records a write to key at now, or refuses it with the time left
// until the key may be written again.
func (l *writeLimiter) allow(ns, key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := nsKey{ns, key}
	if at, ok := l.last.get(k); ok {
		if since := now.Sub(at); since >= 0 && since < writeInterval {
			return false, writeInterval - since
		}
	}
	l.last.put(k, now, len(ns)+len(key), func(at time.Time) bool { return now.Sub(at) >= writeInterval })
	return true, 0
}

type locationKey struct{ ns, location, key string }

type cachedRead struct {
	entry kv.Entry
	found bool
	at    time.Time
}

type locations struct {
	mu    sync.Mutex
	reads bounded[locationKey, cachedRead]
}

// lookup returns the location's cached read of key if it is younger than
// window and has not expired itself.
func (l *locations) lookup(k locationKey, window time.Duration, now time.Time) (cachedRead, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.reads.get(k)
	if !ok || now.Sub(c.at) >= window {
		return cachedRead{}, false
	}
	if c.found && !c.entry.Expiration.IsZero() && !now.Before(c.entry.Expiration) {
		return cachedRead{at: c.at}, true // an expired value reads as a miss
	}
	return c, true
}

func (l *locations) remember(k locationKey, c cachedRead, window time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(k.ns) + len(k.location) + len(k.key) + len(c.entry.Value) + len(c.entry.Metadata)
	l.reads.put(k, c, n, func(r cachedRead) bool { return c.at.Sub(r.at) >= window })
}

// readAt reads key as location sees it: from its cache while the entry is
// inside the window, else from the store, caching the result (a miss too).
func (s *Server) readAt(ctx context.Context, ns string, store kv.Store, location, key string) (kv.Entry, error) {
	window := s.faults.consistencyWindow()
	if location == "" || window <= 0 {
		return readEntry(ctx, store, key)
	}
	k := locationKey{ns, location, key}
	now := s.clock.Now()
	if c, ok := s.locations.lookup(k, window, now); ok {
		if !c.found {
			return kv.Entry{}, kv.ErrNotFound
		}
		return c.entry, nil
	}
	e, err := readEntry(ctx, store, key)
	switch {
	case err == nil:
		s.locations.remember(k, cachedRead{entry: e, found: true, at: now}, window)
	case errors.Is(err, kv.ErrNotFound):
		s.locations.remember(k, cachedRead{at: now}, window)
	}
	return e, err
}

// valueAt is readAt for a read that needs no metadata: the store's cheapest
// read of a value and its expiry, unless a consistency window is simulated,
// whose remembered reads are whole entries.
func (s *Server) valueAt(ctx context.Context, ns string, store kv.Store, location, key string) (kv.Entry, error) {
	if location == "" || s.faults.consistencyWindow() <= 0 {
		return kv.GetValueEntry(ctx, store, key)
	}
	return s.readAt(ctx, ns, store, location, key)
}

// wroteAt makes a write made through location visible to its own reads.
func (s *Server) wroteAt(ns, location string, e kv.Entry, found bool) {
	window := s.faults.consistencyWindow()
	if location == "" || window <= 0 {
		return
	}
	s.locations.remember(locationKey{ns, location, e.Key}, cachedRead{entry: e, found: found, at: s.clock.Now()}, window)
}

func readEntry(ctx context.Context, store kv.Store, key string) (kv.Entry, error) {
	if eg, ok := store.(kv.ExpiryGetter); ok {
		return eg.GetEntry(ctx, key)
	}
	v, err := store.Get(ctx, key)
	return kv.Entry{Key: key, Value: v}, err
}
