package kvtest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

func testMissingKey(t *testing.T, h Harness) {
	s := h.New(t)
	wantMissing(t, s, "never-written")
	if eg, ok := s.(kv.ExpiryGetter); ok {
		if _, err := eg.GetEntry(ctx(t), "never-written"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("GetEntry(missing) = %v, want kv.ErrNotFound", err)
		}
	}
}

// roundTripValues are the values every backend must return byte for byte.
func roundTripValues() map[string][]byte {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return map[string][]byte{
		"text":         []byte("hello, world"),
		"empty":        {},
		"json":         []byte(`{"word":"apple","guesses":["crane","slate"],"n":null}`),
		"nul":          []byte("a\x00b\x00"),
		"only-nul":     {0},
		"invalid-utf8": {0xff, 0xfe, 'x', 0xc3},
		"all-bytes":    all,
		"unicode":      []byte("日本語 😀 café"),
		"whitespace":   []byte(" \n\t\r "),
	}
}

func testRoundTrip(t *testing.T, h Harness) {
	s := h.New(t)
	for name, v := range roundTripValues() {
		key := "rt:" + name
		mustPut(t, s, key, v, kv.PutOptions{})
		wantValue(t, s, key, v)
		if ms, ok := s.(kv.MetadataStore); ok {
			wantValueEntry(t, ms, key, string(v), time.Time{})
		}
	}
	// An empty value is a value, not a missing key.
	got, err := s.Get(ctx(t), "rt:empty")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get(empty value) = %v, %v; want a non-nil empty slice", got, err)
	}
}

func testLargestValue(t *testing.T, h Harness) {
	s := h.New(t)
	v := make([]byte, kv.MaxValueSize)
	_, _ = rand.NewChaCha8([32]byte{1, 2}).Read(v) // never fails
	mustPut(t, s, "big", v, kv.PutOptions{})
	got, err := s.Get(ctx(t), "big")
	if err != nil {
		t.Fatalf("Get(25 MiB value): %v", err)
	}
	if !bytes.Equal(got, v) {
		t.Fatalf("25 MiB value came back as %d bytes, different", len(got))
	}
	// Overwriting a large value with a small one leaves nothing behind.
	mustPut(t, s, "big", []byte("small"), kv.PutOptions{})
	wantValue(t, s, "big", []byte("small"))
}

func testOverwrite(t *testing.T, h Harness) {
	s := h.New(t)
	mustPut(t, s, "k", []byte("one"), kv.PutOptions{})
	mustPut(t, s, "k", []byte("two"), kv.PutOptions{})
	wantValue(t, s, "k", []byte("two"))
	equalKeys(t, "List after overwrite", listAll(t, s, "", 0), []string{"k"})
}

// testExpiry runs every expiry behaviour on one timeline, so that the slow
// variant waits about 95 s in all.
func testExpiry(t *testing.T, h Harness) {
	s := h.New(t)
	mustPut(t, s, "ttl", []byte("a"), kv.PutOptions{TTL: kv.MinTTL})
	mustPut(t, s, "cleared", []byte("b"), kv.PutOptions{TTL: kv.MinTTL})
	mustPut(t, s, "cleared", []byte("b2"), kv.PutOptions{}) // Put without TTL clears it.
	mustPut(t, s, "absolute", []byte("c"), kv.PutOptions{Expiration: h.now().Add(90 * time.Second)})
	mustPut(t, s, "forever", []byte("d"), kv.PutOptions{})
	equalKeys(t, "List before expiry", listAll(t, s, "", 0), []string{"absolute", "cleared", "forever", "ttl"})

	h.wait(55 * time.Second)
	wantValue(t, s, "ttl", []byte("a"))

	h.wait(7 * time.Second) // 62 s: "ttl" has expired.
	wantMissing(t, s, "ttl")
	if ms, ok := s.(kv.MetadataStore); ok {
		if md, err := ms.GetMetadata(ctx(t), "ttl"); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("GetMetadata of an expired key = %s, %v; want kv.ErrNotFound", md, err)
		}
	}
	wantValue(t, s, "cleared", []byte("b2"))
	wantValue(t, s, "absolute", []byte("c"))
	equalKeys(t, "List after first expiry", listAll(t, s, "", 0), []string{"absolute", "cleared", "forever"})
	equalKeys(t, "List limit 1 after first expiry", listAll(t, s, "", 1), []string{"absolute", "cleared", "forever"})

	h.wait(33 * time.Second) // 95 s: "absolute" has expired too.
	wantMissing(t, s, "absolute")
	equalKeys(t, "List after second expiry", listAll(t, s, "", 0), []string{"cleared", "forever"})
	if bg, ok := s.(kv.BulkGetter); ok {
		got, err := bg.GetMany(ctx(t), []string{"ttl", "absolute", "forever"})
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		if len(got) != 1 || got[0].Key != "forever" {
			t.Fatalf("GetMany after expiry returned %d entries, want only \"forever\"", len(got))
		}
	}
	// An expired key can be written again.
	mustPut(t, s, "ttl", []byte("again"), kv.PutOptions{})
	wantValue(t, s, "ttl", []byte("again"))
}

func testExpiryReported(t *testing.T, h Harness) {
	s := h.New(t)
	eg, ok := s.(kv.ExpiryGetter)
	if !ok {
		t.Skip("store has no kv.ExpiryGetter ability (optional)")
	}
	mustPut(t, s, "k", []byte("v"), kv.PutOptions{TTL: time.Hour})
	e1, err := eg.GetEntry(ctx(t), "k")
	if err != nil {
		t.Fatalf("GetEntry: %v", err)
	}
	if e1.Expiration.IsZero() {
		t.Fatalf("GetEntry after Put with TTL: no expiration")
	}
	// Moving the clock must leave the absolute expiry where it was (the
	// slow variant does not wait ten minutes for this).
	if h.Advance != nil {
		h.Advance(10 * time.Minute)
	}
	e2, err := eg.GetEntry(ctx(t), "k")
	if err != nil {
		t.Fatalf("GetEntry: %v", err)
	}
	if d := e2.Expiration.Sub(e1.Expiration); d < -time.Second || d > time.Second {
		t.Fatalf("expiration moved by %s between reads", d)
	}
	mustPut(t, s, "k", []byte("v"), kv.PutOptions{})
	e3, err := eg.GetEntry(ctx(t), "k")
	if err != nil || !e3.Expiration.IsZero() || string(e3.Value) != "v" {
		t.Fatalf("GetEntry after Put without TTL = %v, %v; want value and no expiration", e3.Expiration, err)
	}
	// Copying a key with its absolute expiry (what repair does) keeps it.
	mustPut(t, s, "copy", []byte("v"), kv.PutOptions{Expiration: e2.Expiration})
	e4, err := eg.GetEntry(ctx(t), "copy")
	if err != nil {
		t.Fatalf("GetEntry(copy): %v", err)
	}
	if d := e4.Expiration.Sub(e2.Expiration); d < -time.Second || d > time.Second {
		t.Fatalf("copied expiration differs by %s", d)
	}
}

func testDelete(t *testing.T, h Harness) {
	s := h.New(t)
	if err := s.Delete(ctx(t), "never-written"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
	mustPut(t, s, "k", []byte("v"), kv.PutOptions{})
	for i := range 2 {
		if err := s.Delete(ctx(t), "k"); err != nil {
			t.Fatalf("Delete #%d = %v", i+1, err)
		}
		wantMissing(t, s, "k")
	}
	equalKeys(t, "List after delete", listAll(t, s, "", 0), nil)
}
