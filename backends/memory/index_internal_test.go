package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The chunked index holds the same keys, in the same order, as one sorted
// slice under a random mix of inserts, removes, sweeps and seeks, through
// chunk splits, merges and emptied chunks.
func TestSortedKeysMatchesASortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var idx sortedKeys
	var want []string
	has := map[string]bool{}
	key := func() string { return fmt.Sprintf("k%05d", rng.IntN(20_000)) }
	check := func(step int) {
		t.Helper()
		got := idx.collect(idx.seek("", false), -1)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: index holds %d keys, want %d (first difference at %d)", step, len(got), len(want), firstDiff(got, want))
		}
		for _, c := range idx.chunks {
			if len(c) == 0 || len(c) > chunkMax {
				t.Fatalf("step %d: a chunk of %d keys", step, len(c))
			}
		}
		start := key()
		for _, after := range []bool{false, true} {
			i, found := slices.BinarySearch(want, start)
			if found && after {
				i++
			}
			got := idx.collect(idx.seek(start, after), 50)
			if exp := want[i:min(i+50, len(want))]; !slices.Equal(got, exp) {
				t.Fatalf("step %d: seek(%q, %v) = %d keys, want %d", step, start, after, len(got), len(exp))
			}
		}
	}
	for step := range 60_000 {
		switch r := rng.IntN(100); {
		case step < 15_000 || r < 55:
			if k := key(); !has[k] {
				has[k] = true
				idx.insert(k)
				i, _ := slices.BinarySearch(want, k)
				want = slices.Insert(want, i, k)
			}
		case r < 99:
			k := key()
			idx.remove(k)
			if has[k] {
				delete(has, k)
				i, _ := slices.BinarySearch(want, k)
				want = slices.Delete(want, i, i+1)
			}
		default:
			drop := byte(rng.IntN(4)) // a sweep that drops about one key in four
			keep := func(k string) bool { return (k[len(k)-1]-'0')%4 != drop }
			idx.retain(keep)
			for i := 1; i < len(idx.chunks); i++ {
				if n := len(idx.chunks[i-1]) + len(idx.chunks[i]); n <= chunkMax {
					t.Fatalf("step %d: after a sweep, chunks %d and %d hold %d keys together, which fit in one", step, i-1, i, n)
				}
			}
			want = slices.DeleteFunc(want, func(k string) bool {
				if !keep(k) {
					delete(has, k)
					return true
				}
				return false
			})
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	for _, k := range slices.Clone(want) {
		idx.remove(k)
	}
	if len(idx.chunks) != 0 {
		t.Fatalf("%d chunks left with every key removed", len(idx.chunks))
	}
}

// collect returns up to n keys (all for n < 0) from p on.
func (s *sortedKeys) collect(p place, n int) []string {
	var keys []string
	for ; len(keys) != n; p = s.next(p) {
		k, ok := s.at(p)
		if !ok {
			break
		}
		keys = append(keys, k)
	}
	return keys
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
