package kvtest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// Metadata the cases write: an object with the awkward parts of JSON, a bare
// string, and values at and just over the limit.
var (
	mdObject = json.RawMessage(`{"author":"wrangler","tags":["a","b"],"n":1.5,"none":null,"nested":{"é":"😀","$x.y":true}}`)
	mdString = json.RawMessage(`"tag"`)
	mdLimit  = json.RawMessage(`"` + strings.Repeat("m", kv.MaxMetadataSize-2) + `"`)
	mdOver   = json.RawMessage(`"` + strings.Repeat("m", kv.MaxMetadataSize-1) + `"`)
)

// sameMetadata reports whether got holds the JSON value want does (a store
// may return it re-encoded, as the Workers KV REST API does), nil for nil.
func sameMetadata(got, want json.RawMessage) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	var g, w any
	return json.Unmarshal(got, &g) == nil && json.Unmarshal(want, &w) == nil && reflect.DeepEqual(g, w)
}

func wantEntry(t *testing.T, s kv.ExpiryGetter, key, value string, md json.RawMessage, exp time.Time) {
	t.Helper()
	e, err := s.GetEntry(ctx(t), key)
	if err != nil {
		t.Fatalf("GetEntry(%q): %v", key, err)
	}
	if string(e.Value) != value || !sameMetadata(e.Metadata, md) {
		t.Fatalf("GetEntry(%q) = %s with metadata %s, want %q with %s", key, describe(e.Value), e.Metadata, value, md)
	}
	if d := e.Expiration.Sub(exp); d < -time.Second || d > time.Second || e.Expiration.IsZero() != exp.IsZero() {
		t.Fatalf("GetEntry(%q) expiration = %v, want %v", key, e.Expiration, exp)
	}
}

// wantValueEntry checks GetValue: GetEntry's value and expiry, never the
// metadata, whatever the key holds.
func wantValueEntry(t *testing.T, s kv.MetadataStore, key, value string, exp time.Time) {
	t.Helper()
	e, err := s.GetValue(ctx(t), key)
	if err != nil {
		t.Fatalf("GetValue(%q): %v", key, err)
	}
	if string(e.Value) != value || e.Metadata != nil {
		t.Fatalf("GetValue(%q) = %s with metadata %s, want %q and no metadata", key, describe(e.Value), e.Metadata, value)
	}
	if d := e.Expiration.Sub(exp); d < -time.Second || d > time.Second || e.Expiration.IsZero() != exp.IsZero() {
		t.Fatalf("GetValue(%q) expiration = %v, want %v", key, e.Expiration, exp)
	}
}

// testMetadata: a MetadataStore keeps metadata with the value, replaces and
// clears it with the value, and refuses invalid metadata before writing;
// any other store refuses metadata rather than dropping it.
func testMetadata(t *testing.T, h Harness) {
	s := h.New(t)
	ms, ok := s.(kv.MetadataStore)
	if !ok {
		err := kv.PutEntry(ctx(t), s, kv.Entry{Key: "md", Value: []byte("v"), Metadata: mdString})
		if !errors.Is(err, kv.ErrMetadataUnsupported) {
			t.Fatalf("PutEntry with metadata on a store without the ability = %v, want kv.ErrMetadataUnsupported", err)
		}
		wantMissing(t, s, "md")
		if bp, ok := s.(kv.BulkPutter); ok {
			err := bp.PutMany(ctx(t), []kv.Entry{{Key: "md", Value: []byte("v"), Metadata: mdString}})
			if !errors.Is(err, kv.ErrMetadataUnsupported) {
				t.Fatalf("PutMany with metadata on a store without the ability = %v, want kv.ErrMetadataUnsupported", err)
			}
			wantMissing(t, s, "md")
		}
		return
	}
	put := func(e kv.Entry) {
		t.Helper()
		if err := ms.PutEntry(ctx(t), e); err != nil {
			t.Fatalf("PutEntry(%q, metadata %d bytes): %v", e.Key, len(e.Metadata), err)
		}
	}
	exp := h.now().Add(2 * time.Hour).Truncate(time.Second)
	put(kv.Entry{Key: "md", Value: []byte("one"), Expiration: exp, Metadata: mdObject})
	wantEntry(t, ms, "md", "one", mdObject, exp)
	wantValue(t, s, "md", []byte("one"))
	wantValueEntry(t, ms, "md", "one", exp)
	if md, err := ms.GetMetadata(ctx(t), "md"); err != nil || !sameMetadata(md, mdObject) {
		t.Fatalf("GetMetadata = %s, %v; want %s", md, err, mdObject)
	}
	if _, err := ms.GetMetadata(ctx(t), "never-written"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("GetMetadata(missing) = %v, want kv.ErrNotFound", err)
	}
	if _, err := ms.GetValue(ctx(t), "never-written"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("GetValue(missing) = %v, want kv.ErrNotFound", err)
	}
	if _, err := ms.GetValue(ctx(t), ".."); !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("GetValue(\"..\") = %v, want kv.ErrInvalidKey", err)
	}

	// Replaced with the value, and cleared by an entry without metadata.
	put(kv.Entry{Key: "md", Value: []byte("two"), Metadata: mdLimit})
	wantEntry(t, ms, "md", "two", mdLimit, time.Time{})
	put(kv.Entry{Key: "md", Value: []byte("three")})
	wantEntry(t, ms, "md", "three", nil, time.Time{})
	if md, err := ms.GetMetadata(ctx(t), "md"); err != nil || md != nil {
		t.Fatalf("GetMetadata of a key without metadata = %s, %v; want none", md, err)
	}

	// Every store keeps the one normal form, so that a key reads back the
	// same bytes from all of them: compacted, and JSON null as none.
	put(kv.Entry{Key: "md", Value: []byte("spaced"), Metadata: json.RawMessage(" { \"a\" : [1, 2] }\n")})
	if e, err := ms.GetEntry(ctx(t), "md"); err != nil || string(e.Metadata) != `{"a":[1,2]}` {
		t.Fatalf("GetEntry after spaced metadata = %q, %v; want the compacted {\"a\":[1,2]}", e.Metadata, err)
	}
	put(kv.Entry{Key: "md", Value: []byte("null"), Metadata: json.RawMessage("null")})
	if e, err := ms.GetEntry(ctx(t), "md"); err != nil || e.Metadata != nil {
		t.Fatalf("GetEntry after null metadata = %q, %v; want none", e.Metadata, err)
	}
	// The limit counts the compacted form.
	put(kv.Entry{Key: "md", Value: []byte("padded"), Metadata: append(append(json.RawMessage("  "), mdLimit...), ' ')})
	wantEntry(t, ms, "md", "padded", mdLimit, time.Time{})

	// A Put is a write without metadata: it clears it.
	put(kv.Entry{Key: "md", Value: []byte("four"), Metadata: mdString})
	mustPut(t, s, "md", []byte("five"), kv.PutOptions{})
	wantEntry(t, ms, "md", "five", nil, time.Time{})

	// Invalid metadata is refused with nothing written.
	put(kv.Entry{Key: "md", Value: []byte("kept"), Metadata: mdString})
	for name, bad := range map[string]json.RawMessage{"over the limit": mdOver, "not JSON": json.RawMessage(`{"a":`), "two values": json.RawMessage(`1 2`)} {
		if err := ms.PutEntry(ctx(t), kv.Entry{Key: "md", Value: []byte("lost"), Metadata: bad}); !errors.Is(err, kv.ErrInvalidMetadata) {
			t.Fatalf("PutEntry with metadata %s = %v, want kv.ErrInvalidMetadata", name, err)
		}
		if bp, ok := s.(kv.BulkPutter); ok {
			err := bp.PutMany(ctx(t), []kv.Entry{{Key: "md:new", Value: []byte("v")}, {Key: "md", Value: []byte("lost"), Metadata: bad}})
			if !errors.Is(err, kv.ErrInvalidMetadata) {
				t.Fatalf("PutMany with metadata %s = %v, want kv.ErrInvalidMetadata", name, err)
			}
			wantMissing(t, s, "md:new")
		}
	}
	wantEntry(t, ms, "md", "kept", mdString, time.Time{})

	// Metadata goes with its key: deleted and expired with it.
	if err := s.Delete(ctx(t), "md"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	put(kv.Entry{Key: "md", Value: []byte("fresh")})
	wantEntry(t, ms, "md", "fresh", nil, time.Time{})
}

// testMetadataBulk: PutMany stores each entry's metadata, GetMany returns it.
func testMetadataBulk(t *testing.T, h Harness) {
	s := h.New(t)
	ms, isMeta := s.(kv.MetadataStore)
	bp, canPut := s.(kv.BulkPutter)
	bg, canGet := s.(kv.BulkGetter)
	if !isMeta || (!canPut && !canGet) {
		t.Skip("store has no metadata or no bulk abilities (optional)")
	}
	exp := h.now().Add(2 * time.Hour).Truncate(time.Second)
	entries := []kv.Entry{
		{Key: "m:1", Value: []byte("one"), Metadata: mdObject},
		{Key: "m:2", Value: []byte{0xff, 0}, Expiration: exp, Metadata: mdString},
		{Key: "m:3", Value: []byte("none")},
		{Key: "m:é/?#", Value: []byte("odd key"), Metadata: mdLimit},
	}
	write := func(entries []kv.Entry) {
		t.Helper()
		if canPut {
			if err := bp.PutMany(ctx(t), entries); err != nil {
				t.Fatalf("PutMany: %v", err)
			}
			return
		}
		for _, e := range entries {
			if err := ms.PutEntry(ctx(t), e); err != nil {
				t.Fatalf("PutEntry(%q): %v", e.Key, err)
			}
		}
	}
	write(entries)
	for _, e := range entries {
		wantEntry(t, ms, e.Key, string(e.Value), e.Metadata, e.Expiration)
	}
	if canGet {
		got, err := bg.GetMany(ctx(t), []string{"m:1", "m:2", "m:3", "m:é/?#", "m:missing"})
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		if len(got) != len(entries) {
			t.Fatalf("GetMany returned %d entries, want %d", len(got), len(entries))
		}
		want := make(map[string]kv.Entry, len(entries))
		for _, e := range entries {
			want[e.Key] = e
		}
		for _, g := range got {
			w := want[g.Key]
			if string(g.Value) != string(w.Value) || !sameMetadata(g.Metadata, w.Metadata) {
				t.Fatalf("GetMany %q = %s with metadata %s, want %s with %s", g.Key, describe(g.Value), g.Metadata, describe(w.Value), w.Metadata)
			}
		}
	}
	// An entry without metadata clears the metadata its key had.
	write([]kv.Entry{{Key: "m:1", Value: []byte("again")}})
	wantEntry(t, ms, "m:1", "again", nil, time.Time{})
}

// testListInfo: a store that lists each key's expiry and metadata
// (ListResult.Info) lists what GetEntry reads: no expiry and no metadata
// where the key has none, its own where it has them, each beside its own
// key, also where a prefix spans keys of several modules and keys of none
// (which a store may keep apart: mongokv's collections), in one page or
// across pages.
func testListInfo(t *testing.T, h Harness) {
	s := h.New(t)
	exp := h.now().Add(2 * time.Hour).Truncate(time.Second)
	later := exp.Add(time.Hour)
	mustPut(t, s, "li:plain", []byte("p"), kv.PutOptions{})
	mustPut(t, s, "li:ttl", []byte("t"), kv.PutOptions{Expiration: exp})
	// Keys of no module, on both sides of the module "li"'s keys in byte
	// order ("!" < ":" < "Z"), and of another module.
	mustPut(t, s, "li!none", []byte("n"), kv.PutOptions{Expiration: later})
	mustPut(t, s, "liZ", []byte("z"), kv.PutOptions{})
	mustPut(t, s, "lia:x", []byte("x"), kv.PutOptions{Expiration: later})
	want := map[string]kv.KeyInfo{"li:plain": {}, "li:ttl": {Expiration: exp}, "li!none": {Expiration: later}, "liZ": {}, "lia:x": {Expiration: later}}
	if ms, ok := s.(kv.MetadataStore); ok {
		for _, e := range []kv.Entry{
			{Key: "li:md", Value: []byte("m"), Expiration: exp, Metadata: mdObject},
			{Key: "li!md", Value: []byte("m"), Metadata: mdString},
			{Key: "lia:md", Value: []byte("m"), Expiration: later, Metadata: json.RawMessage(`{"in":"lia"}`)},
			{Key: "liZmd", Value: []byte("m"), Metadata: json.RawMessage(`[1]`)},
		} {
			if err := ms.PutEntry(ctx(t), e); err != nil {
				t.Fatalf("PutEntry(%q): %v", e.Key, err)
			}
			want[e.Key] = kv.KeyInfo{Expiration: e.Expiration, Metadata: e.Metadata}
		}
	}
	for _, c := range []struct {
		prefix string
		limit  int
	}{{"li:", 0}, {"li", 0}, {"li", 3}} {
		var keys []string
		for cursor, pages := "", 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("List(%q, limit %d) never reported Done", c.prefix, c.limit)
			}
			res, err := s.List(ctx(t), kv.ListOptions{Prefix: c.prefix, Limit: c.limit, Cursor: cursor})
			if err != nil {
				t.Fatalf("List(%q, limit %d): %v", c.prefix, c.limit, err)
			}
			if res.Info == nil {
				if h.ListsInfo {
					t.Fatalf("List(%q, limit %d) of %d keys listed no expiries and metadata, which this store lists", c.prefix, c.limit, len(res.Keys))
				}
				return // the store does not list them
			}
			if len(res.Info) != len(res.Keys) {
				t.Fatalf("List(%q, limit %d) = %d keys, %d infos; want one info a key", c.prefix, c.limit, len(res.Keys), len(res.Info))
			}
			for i, k := range res.Keys {
				got, w := res.Info[i], want[k]
				if d := got.Expiration.Sub(w.Expiration); d < -time.Second || d > time.Second || got.Expiration.IsZero() != w.Expiration.IsZero() {
					t.Errorf("List(%q, limit %d) info of %q: expiration %v, want %v", c.prefix, c.limit, k, got.Expiration, w.Expiration)
				}
				if !sameMetadata(got.Metadata, w.Metadata) {
					t.Errorf("List(%q, limit %d) info of %q: metadata %s, want %s", c.prefix, c.limit, k, got.Metadata, w.Metadata)
				}
			}
			keys = append(keys, res.Keys...)
			if res.Done {
				break
			}
			cursor = res.Cursor
		}
		n := 0
		for k := range want {
			if strings.HasPrefix(k, c.prefix) {
				n++
			}
		}
		if len(keys) != n {
			t.Fatalf("List(%q, limit %d) = %q, want the %d keys with the prefix", c.prefix, c.limit, keys, n)
		}
	}
}
