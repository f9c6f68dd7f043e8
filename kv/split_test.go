package kv_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

// capped answers a bulk read as Workers KV does: refused with ErrTooLarge
// when the values found pass limit bytes together.
type capped struct {
	values map[string]int // key -> value length
	limit  int
	calls  [][]string
	ones   []string
}

func (c *capped) many(_ context.Context, keys []string) ([]kv.Entry, error) {
	c.calls = append(c.calls, slices.Clone(keys))
	total := 0
	var out []kv.Entry
	for _, k := range keys {
		if n, ok := c.values[k]; ok {
			total += n
			out = append(out, kv.Entry{Key: k, Value: make([]byte, n)})
		}
	}
	if total > c.limit {
		return nil, kv.ErrTooLarge
	}
	return out, nil
}

func (c *capped) one(_ context.Context, key string) (kv.Entry, error) {
	c.ones = append(c.ones, key)
	n, ok := c.values[key]
	if !ok {
		return kv.Entry{}, kv.ErrNotFound
	}
	return kv.Entry{Value: make([]byte, n)}, nil
}

func TestReadSplitReadsEveryKeyWhateverTheSizes(t *testing.T) {
	c := &capped{limit: 100, values: map[string]int{"big": 150, "edge": 100, "s1": 1, "s2": 2, "s3": 3}}
	keys := []string{"s1", "big", "s2", "missing", "edge", "s3"}
	found := map[string]int{}
	covered := 0
	err := kv.ReadSplit(context.Background(), keys, c.many, c.one, func(ks []string, got []kv.Entry, err error) error {
		if err != nil {
			t.Fatalf("piece %v: %v", ks, err)
		}
		covered += len(ks)
		size := 0
		for _, e := range got {
			found[e.Key] = len(e.Value)
			size += len(e.Value)
		}
		if size > c.limit && len(ks) > 1 {
			t.Errorf("piece %v holds %d bytes, over the limit, with other keys", ks, size)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if covered != len(keys) {
		t.Errorf("pieces covered %d keys, want %d", covered, len(keys))
	}
	for k, n := range c.values {
		if found[k] != n {
			t.Errorf("%s: read %d bytes, want %d", k, found[k], n)
		}
	}
	if _, ok := found["missing"]; ok {
		t.Error("a missing key was found")
	}
	if !slices.Equal(c.ones, []string{"big"}) {
		t.Errorf("keys read alone: %v, want only the one too large for any batch", c.ones)
	}
}

func TestReadSplitPassesOtherErrorsToPiece(t *testing.T) {
	boom := errors.New("boom")
	many := func(context.Context, []string) ([]kv.Entry, error) { return nil, boom }
	one := func(context.Context, string) (kv.Entry, error) { t.Fatal("one called"); return kv.Entry{}, nil }
	var seen error
	err := kv.ReadSplit(context.Background(), []string{"a", "b"}, many, one, func(_ []string, _ []kv.Entry, err error) error {
		seen = err
		return nil
	})
	if err != nil || !errors.Is(seen, boom) {
		t.Fatalf("ReadSplit = %v, piece saw %v; want nil and boom", err, seen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := kv.ReadSplit(ctx, []string{"a"}, many, one, func([]string, []kv.Entry, error) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadSplit on a cancelled context = %v", err)
	}
}
