package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// Expired keys are reclaimed in a store that only grows, and a large store
// sweeps once per as many writes as its last sweep left keys rather than
// every sweepEvery writes: 20,000 expired keys leave within the next
// 20,000 writes of new keys, and 40,000 writes into a store of 20,000 to
// 40,000 keys make at most 3 sweeps (10 at a sweep every 4,096 writes).
func TestSweepReclaimsExpiredKeysAtAnySize(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	s := New(Config{Clock: fake})
	put := func(key string, ttl time.Duration) {
		t.Helper()
		if err := s.Put(ctx, key, []byte("v"), kv.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20_000
	for i := range n {
		put(fmt.Sprintf("old:%05d", i), time.Minute)
	}
	fake.Advance(2 * time.Minute)
	reclaimed, sweeps := 0, 0
	for i := range 2 * n {
		before := s.writes
		put(fmt.Sprintf("new:%05d", i), 0)
		if s.writes <= before {
			sweeps++
		}
		if reclaimed == 0 && len(s.data) == i+1 {
			reclaimed = i + 1
		}
	}
	switch {
	case reclaimed == 0:
		t.Fatalf("the %d expired keys were never reclaimed in %d writes: the store holds %d keys", n, 2*n, len(s.data))
	case reclaimed > n:
		t.Fatalf("the expired keys were reclaimed after %d writes, want at most %d", reclaimed, n)
	case sweeps > 3:
		t.Fatalf("%d sweeps during %d writes into a store of %d to %d keys, want at most 3", sweeps, 2*n, n, 2*n)
	}
	if got := len(s.data); got != 2*n {
		t.Fatalf("the store holds %d keys, want the %d live ones", got, 2*n)
	}
	res, err := s.List(ctx, kv.ListOptions{Prefix: "old:"})
	if err != nil || len(res.Keys) != 0 || !res.Done {
		t.Fatalf("List of the expired keys = %d keys, done %v, %v; want none", len(res.Keys), res.Done, err)
	}
	t.Logf("reclaimed after %d writes, %d sweeps in %d writes", reclaimed, sweeps, 2*n)
}
