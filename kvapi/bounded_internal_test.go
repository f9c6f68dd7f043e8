package kvapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TestBounded: a fault cache never holds more entries or bytes than its
// bounds, drops stale entries before fresh ones, and keeps the newest.
func TestBounded(t *testing.T) {
	b := bounded[int, bool]{maxEntries: 100, maxBytes: 1 << 20}
	for i := range 1000 {
		b.put(i, i%2 == 0, 10, func(stale bool) bool { return stale })
		if b.len() > 100 || b.bytes > 1<<20 {
			t.Fatalf("after %d puts: %d entries, %d bytes", i+1, b.len(), b.bytes)
		}
		if _, ok := b.get(i); !ok {
			t.Fatalf("the newest entry %d was dropped", i)
		}
	}
	b = bounded[int, bool]{maxEntries: 1000, maxBytes: 10 << 10}
	for i := range 1000 {
		b.put(i, false, 1000, func(bool) bool { return false })
		if b.bytes > 10<<10 {
			t.Fatalf("after %d puts: %d bytes", i+1, b.bytes)
		}
	}
	b.put(-1, false, 20<<10, func(bool) bool { return false })
	if _, ok := b.get(-1); ok {
		t.Fatal("an entry larger than the whole bound was kept")
	}
	// Stale entries go first.
	b = bounded[int, bool]{maxEntries: 10, maxBytes: 1 << 20}
	for i := range 10 {
		b.put(i, i < 5, 1, func(stale bool) bool { return stale })
	}
	b.put(10, false, 1, func(stale bool) bool { return stale })
	for i := 5; i <= 10; i++ {
		if _, ok := b.get(i); !ok {
			t.Fatalf("fresh entry %d dropped while stale ones were there", i)
		}
	}
}

// TestFaultCachesBounded: the write limiter and the edge locations stay
// within their bounds under many keys, locations and large values.
func TestFaultCachesBounded(t *testing.T) {
	var l writeLimiter
	now := time.Unix(1e9, 0)
	for i := range MaxFaultEntries + 10 {
		l.allow("ns", fmt.Sprint("k", i), now)
	}
	if n := l.last.len(); n > MaxFaultEntries || l.last.bytes > MaxFaultBytes {
		t.Fatalf("write limiter holds %d entries, %d bytes", n, l.last.bytes)
	}
	var locs locations
	value := make([]byte, 1<<20)
	for i := range 200 {
		k := locationKey{"ns", fmt.Sprint("loc", i), "k"}
		locs.remember(k, cachedRead{entry: kv.Entry{Key: "k", Value: value}, found: true, at: now}, time.Minute)
	}
	if locs.reads.bytes > MaxFaultBytes {
		t.Fatalf("locations hold %d bytes, over %d", locs.reads.bytes, MaxFaultBytes)
	}
}
