package cfkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// TestBulkSplitsAtTheAPILimits: 10,001 pairs are two bulk writes, 101 keys
// two bulk reads, 10,001 keys two bulk deletes.
func TestBulkSplitsAtTheAPILimits(t *testing.T) {
	clk := clock.NewFake(start)
	r := newRig(t, clk, nil)
	ctx := t.Context()
	exp := clk.Now().Add(time.Hour)
	entries := make([]kv.Entry, 10_001)
	keys := make([]string, len(entries))
	for i := range entries {
		keys[i] = fmt.Sprintf("b:%05d", i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte(keys[i])}
		if i%2 == 0 {
			entries[i].Expiration = exp
		}
	}
	count := func(what string, want int64, call func() error) {
		t.Helper()
		before := r.server.Requests()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := r.server.Requests() - before; n != want {
			t.Fatalf("%s made %d requests, want %d", what, n, want)
		}
	}
	count("PutMany(10,001)", 2, func() error { return r.store.PutMany(ctx, entries) })
	if n := r.mem.Len(); n != len(entries) {
		t.Fatalf("server holds %d keys, want %d", n, len(entries))
	}
	var got []kv.Entry
	count("GetMany(101)", 2, func() error {
		var err error
		got, err = r.store.GetMany(ctx, append(keys[:101:101], "b:missing", keys[0]))
		return err
	})
	if len(got) != 101 {
		t.Fatalf("GetMany returned %d entries, want 101 (missing key absent, duplicate once)", len(got))
	}
	slices.SortFunc(got, func(a, b kv.Entry) int { return strings.Compare(a.Key, b.Key) })
	for i, e := range got {
		if e.Key != keys[i] || string(e.Value) != keys[i] {
			t.Fatalf("entry %d = %q=%q", i, e.Key, e.Value)
		}
		if wantExp := i%2 == 0; wantExp != e.Expiration.Equal(exp) || (!wantExp && !e.Expiration.IsZero()) {
			t.Fatalf("entry %q expiration %v, want %v", e.Key, e.Expiration, wantExp)
		}
	}
	count("DeleteMany(10,001)", 2, func() error { return r.store.DeleteMany(ctx, append(keys, "b:never")) })
	if n := r.mem.Len(); n != 0 {
		t.Fatalf("server holds %d keys after DeleteMany, want 0", n)
	}
}

// TestBulkBinaryValues: bulk/get returns JSON strings, so a value that is
// not UTF-8 is fetched again raw; text values cost nothing extra.
func TestBulkBinaryValues(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	ctx := t.Context()
	values := map[string][]byte{
		"text":      []byte("plain"),
		"binary":    {0xff, 0xfe, 0, 'x'},
		"replaced":  []byte("has \uFFFD already"),
		"empty":     {},
		"html-ish":  []byte(`<a href="x">&amp;</a>`),
		"control":   []byte("\x00\x01\x1f\u2028"),
		"long-utf8": []byte(strings.Repeat("日本", 1000)),
	}
	var entries []kv.Entry
	var keys []string
	for k, v := range values {
		entries = append(entries, kv.Entry{Key: k, Value: v})
		keys = append(keys, k)
	}
	if err := r.store.PutMany(ctx, entries); err != nil {
		t.Fatal(err)
	}
	for k, v := range values {
		if got, _ := r.mem.Get(ctx, k); string(got) != string(v) {
			t.Fatalf("server holds %q = %q, want %q", k, got, v)
		}
	}
	before := r.server.Requests()
	got, err := r.store.GetMany(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.server.Requests() - before; n != 3 {
		t.Fatalf("GetMany made %d requests, want 3 (one bulk read, two values holding U+FFFD read again)", n)
	}
	if len(got) != len(values) {
		t.Fatalf("GetMany returned %d entries, want %d", len(got), len(values))
	}
	for _, e := range got {
		if string(e.Value) != string(values[e.Key]) {
			t.Fatalf("GetMany %q = %q, want %q", e.Key, e.Value, values[e.Key])
		}
	}
}

// TestBulkUnsuccessfulKeys: keys the API refuses within a bulk write (one
// write per second per key) are sent again; none is dropped silently.
func TestBulkUnsuccessfulKeys(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	r := newRig(t, clk, nil)
	r.server.Faults().SetWriteRateLimit(true)
	ctx := t.Context()
	if err := r.store.Put(ctx, "hot", []byte("old"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	batch := []kv.Entry{{Key: "cold", Value: []byte("c")}, {Key: "hot", Value: []byte("new")}}
	err := run(clk, 250*time.Millisecond, func() error { return r.store.PutMany(ctx, batch) })
	if err != nil {
		t.Fatalf("PutMany with a hot key: %v", err)
	}
	if v, _ := r.mem.Get(ctx, "hot"); string(v) != "new" {
		t.Fatalf("hot key holds %q after PutMany, want the retried write", v)
	}
	if w := clk.waits(); !slices.Equal(w, []time.Duration{time.Second}) {
		t.Fatalf("waits %v, want one second before sending the refused key again", w)
	}

	// A key named twice in a batch is written once, with its last value,
	// and so is not refused by its own earlier write.
	clk.Advance(time.Second)
	twice := []kv.Entry{{Key: "dup", Value: []byte("first")}, {Key: "other", Value: []byte("o")}, {Key: "dup", Value: []byte("last")}}
	before := r.server.Requests()
	if err := r.store.PutMany(ctx, twice); err != nil {
		t.Fatalf("PutMany with a key twice: %v", err)
	}
	if v, _ := r.mem.Get(ctx, "dup"); string(v) != "last" || r.server.Requests()-before != 1 {
		t.Fatalf("dup = %q after %d requests; want the last value in one request", v, r.server.Requests()-before)
	}

	// With no retries left the refusal is reported, with a count.
	r2 := newRig(t, clock.NewFake(start), func(c *cfkv.Config) { c.MaxRetries = -1 })
	r2.server.Faults().SetWriteRateLimit(true)
	if err := r2.store.DeleteMany(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	err = r2.store.DeleteMany(ctx, []string{"a", "b"})
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "1 of 2 keys") {
		t.Fatalf("DeleteMany with a refused key and no retries = %v; want kv.ErrUnavailable naming 1 of 2 keys", err)
	}
}

// TestMaxBulkWrite: a lower MaxBulkWrite (a bridge Worker's 1,000) splits
// bulk writes and deletes at it; outside 1..10,000 the Config is refused.
func TestMaxBulkWrite(t *testing.T) {
	clk := clock.NewFake(start)
	r := newRig(t, clk, func(c *cfkv.Config) { c.MaxBulkWrite = 1000 })
	ctx := t.Context()
	entries := make([]kv.Entry, 2500)
	keys := make([]string, len(entries))
	for i := range entries {
		keys[i] = fmt.Sprintf("m:%05d", i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte("v")}
	}
	for what, call := range map[string]func() error{
		"PutMany(2,500)":    func() error { return r.store.PutMany(ctx, entries) },
		"DeleteMany(2,500)": func() error { return r.store.DeleteMany(ctx, keys) },
	} {
		before := r.server.Requests()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := r.server.Requests() - before; n != 3 {
			t.Fatalf("%s made %d requests with MaxBulkWrite 1000, want 3", what, n)
		}
	}
	for _, bad := range []int{-1, 10_001} {
		cfg := cfkv.Config{AccountID: "acc", NamespaceID: "ns", APIToken: "t", MaxBulkWrite: bad}
		if _, err := cfkv.New(cfg); !errors.Is(err, cfkv.ErrConfig) {
			t.Errorf("New(MaxBulkWrite %d) = %v, want ErrConfig", bad, err)
		}
	}
}

// TestLargeValuesReadInPieces: Workers KV refuses a bulk get whose values
// pass 25 MiB together (413, code 10024). GetMany says so with
// kv.ErrTooLarge, GetEntry reads a 25 MiB value with metadata (over the
// bulk answer's limit alone) by its own requests, and kv.ReadSplit over
// the two reads every key, the large ones alone.
func TestLargeValuesReadInPieces(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	ctx := context.Background()
	sizes := map[string]int{"big": kv.MaxValueSize, "mid": 2 << 20, "one": 1 << 20, "s1": 10, "s2": 20}
	for k, n := range sizes {
		e := kv.Entry{Key: k, Value: bytes.Repeat([]byte{'a' + byte(n%26)}, n)}
		if k == "big" {
			e.Metadata = []byte(`{"note":"over the bulk answer's limit with its value"}`)
		}
		if err := kv.PutEntry(ctx, r.mem, e); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"s1", "big", "mid", "one", "s2", "gone"}
	if _, err := r.store.GetMany(ctx, keys); !errors.Is(err, kv.ErrTooLarge) {
		t.Fatalf("GetMany over 25 MiB = %v, want kv.ErrTooLarge", err)
	}
	e, err := r.store.GetEntry(ctx, "big")
	if err != nil || len(e.Value) != kv.MaxValueSize || e.Metadata == nil {
		t.Fatalf("GetEntry(big) = %d bytes, metadata %s, %v", len(e.Value), e.Metadata, err)
	}
	got := map[string]int{}
	err = kv.ReadSplit(ctx, keys, r.store.GetMany, r.store.GetEntry, func(_ []string, es []kv.Entry, err error) error {
		if err != nil {
			return err
		}
		for _, e := range es {
			got[e.Key] = len(e.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, sizes) {
		t.Fatalf("ReadSplit read %v, want %v", got, sizes)
	}
}
