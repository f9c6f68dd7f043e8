package cfkv_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// wireKeys change the meaning of a URL unless escaped.
var wireKeys = []string{
	"a/../b", "../x", "a/./b", "a/", "a?b", "?", "a#b", "#", "a%b", "%", "a%2Fb", "%zz",
	"a b", " ", "a+b", "a&b=c", "a;b", "日本語", "😀", "café", "e\u0301", "tab\tkey", "nul\x00key",
	"...", "wordle:games:42",
}

// TestKeysEscapedOnTheWire proves at the server that each key arrives as
// itself: the store behind the API holds exactly the keys written.
func TestKeysEscapedOnTheWire(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	ctx := t.Context()
	for _, k := range wireKeys {
		if err := r.store.Put(ctx, k, []byte("v:"+k), kv.PutOptions{}); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	for _, k := range wireKeys {
		got, err := r.mem.Get(ctx, k) // what the server stored, read beside the API
		if err != nil || string(got) != "v:"+k {
			t.Fatalf("server holds %q = %q, %v; want the value written through the API", k, got, err)
		}
		got, err = r.store.Get(ctx, k)
		if err != nil || string(got) != "v:"+k {
			t.Fatalf("Get(%q) = %q, %v", k, got, err)
		}
	}
	res, err := r.mem.List(ctx, kv.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(wireKeys))
	if !slices.Equal(res.Keys, want) {
		t.Fatalf("server holds keys %q, want exactly %q", res.Keys, want)
	}
	for _, k := range wireKeys {
		if err := r.store.Delete(ctx, k); err != nil {
			t.Fatalf("Delete(%q): %v", k, err)
		}
		if _, err := r.mem.Get(ctx, k); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("after Delete(%q) the server still holds it: %v", k, err)
		}
	}
}

// TestValidationBeforeIO checks that refused input never reaches the API.
func TestValidationBeforeIO(t *testing.T) {
	clk := clock.NewFake(start)
	r := newRig(t, clk, nil)
	ctx := t.Context()
	calls := map[string]func() error{
		"Get(empty)":   func() error { _, err := r.store.Get(ctx, ""); return err },
		"GetEntry(..)": func() error { _, err := r.store.GetEntry(ctx, ".."); return err },
		"Put(too big)": func() error { return r.store.Put(ctx, "k", make([]byte, kv.MaxValueSize+1), kv.PutOptions{}) },
		"Put(TTL 59s)": func() error { return r.store.Put(ctx, "k", nil, kv.PutOptions{TTL: 59 * time.Second}) },
		"Put(expiration past)": func() error {
			return r.store.Put(ctx, "k", nil, kv.PutOptions{Expiration: clk.Now().Add(-time.Minute)})
		},
		"Delete(bad utf8)":      func() error { return r.store.Delete(ctx, "a\xff") },
		"List(limit 1001)":      func() error { _, err := r.store.List(ctx, kv.ListOptions{Limit: 1001}); return err },
		"List(foreign cursor)":  func() error { _, err := r.store.List(ctx, kv.ListOptions{Cursor: kv.EncodeCursor("a")}); return err },
		"GetMany(bad key)":      func() error { _, err := r.store.GetMany(ctx, []string{"ok", "."}); return err },
		"PutMany(expiring now)": func() error { return r.store.PutMany(ctx, []kv.Entry{{Key: "k", Expiration: clk.Now()}}) },
		"DeleteMany(empty key)": func() error { return r.store.DeleteMany(ctx, []string{""}) },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s succeeded, want a validation error", name)
		}
	}
	if n := r.server.Requests(); n != 0 {
		t.Fatalf("refused input made %d requests, want 0", n)
	}
	// Nothing at all is sent for empty batches either.
	if _, err := r.store.GetMany(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.store.PutMany(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.store.DeleteMany(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := r.server.Requests(); n != 0 {
		t.Fatalf("empty batches made %d requests, want 0", n)
	}
}

// TestExpiriesOnTheWire checks how expiries travel: a TTL in whole seconds,
// an absolute time rounded up to the second (so the API's own 60 s check
// never refuses what kv.ValidatePut accepted).
func TestExpiriesOnTheWire(t *testing.T) {
	clk := clock.NewFake(start.Add(500 * time.Millisecond))
	r := newRig(t, clk, nil)
	ctx := t.Context()
	if err := r.store.Put(ctx, "ttl", []byte("v"), kv.PutOptions{TTL: 90*time.Second + 900*time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	exact := clk.Now().Add(kv.MinTTL) // 60.0 s away, not on a whole second
	if err := r.store.Put(ctx, "abs", []byte("v"), kv.PutOptions{Expiration: exact}); err != nil {
		t.Fatalf("Put with an expiration exactly %s away: %v", kv.MinTTL, err)
	}
	for key, want := range map[string]time.Time{
		"ttl": clk.Now().Add(90 * time.Second).Truncate(time.Second),
		"abs": exact.Truncate(time.Second).Add(time.Second),
	} {
		e, err := r.store.GetEntry(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !e.Expiration.Equal(want) {
			t.Errorf("%s expires at %v, want %v", key, e.Expiration, want)
		}
		got, _ := r.mem.GetEntry(ctx, key) // the API reports whole seconds
		if !got.Expiration.Truncate(time.Second).Equal(want) {
			t.Errorf("server holds %s expiring at %v, want %v", key, got.Expiration, want)
		}
	}
}

// TestNotFoundOnlyForMissingKeys: a 404 for another reason is not "no
// such key".
func TestNotFoundOnlyForMissingKeys(t *testing.T) {
	r := newRig(t, clock.NewFake(start), func(c *cfkv.Config) { c.NamespaceID = "no-such-namespace" })
	_, err := r.store.Get(t.Context(), "k")
	var apiErr *cfkv.APIError
	if errors.Is(err, kv.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != kvapi.CodeNoNamespace {
		t.Fatalf("Get in a missing namespace = %v; want an APIError 404 code %d, not kv.ErrNotFound", err, kvapi.CodeNoNamespace)
	}
	if err := r.store.Delete(t.Context(), "k"); err == nil {
		t.Fatal("Delete in a missing namespace succeeded")
	}
}

// TestWrongToken: the API's refusal comes back as an APIError.
func TestWrongToken(t *testing.T) {
	r := newRig(t, clock.NewFake(start), func(c *cfkv.Config) { c.APIToken = "another-token" })
	err := r.store.Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
	var apiErr *cfkv.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 || apiErr.Code != kvapi.CodeAuthentication {
		t.Fatalf("Put with a wrong token = %v; want an APIError 403 code %d", err, kvapi.CodeAuthentication)
	}
	if errors.Is(err, kv.ErrUnavailable) {
		t.Fatal("a refused token is not unavailability")
	}
	if n := r.server.Requests(); n != 1 {
		t.Fatalf("a refused token was tried %d times, want 1 (no retry)", n)
	}
}

// TestSuccessFalse: HTTP 200 with success:false is a failure, on envelope
// calls and on a value read alike.
func TestSuccessFalse(t *testing.T) {
	r := newRig(t, clock.NewFake(start), func(c *cfkv.Config) { c.MaxRetries = -1 })
	ctx := t.Context()
	if err := r.store.Put(ctx, "k", []byte(`{"success":false}`), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	r.server.Faults().FailNext(4, kvapi.Failure{Status: 200})
	var apiErr *cfkv.APIError
	if err := r.store.Put(ctx, "k", []byte("v"), kv.PutOptions{}); !errors.As(err, &apiErr) || apiErr.Status != 200 || apiErr.Code != kvapi.CodeUnavailable {
		t.Fatalf("Put answered 200 success:false = %v; want an APIError", err)
	}
	if _, err := r.store.Get(ctx, "k"); !errors.As(err, &apiErr) {
		t.Fatalf("Get answered 200 success:false = %v; want an APIError, not the envelope as a value", err)
	}
	if _, err := r.store.List(ctx, kv.ListOptions{}); !errors.As(err, &apiErr) {
		t.Fatalf("List answered 200 success:false = %v; want an APIError", err)
	}
	if err := r.store.DeleteMany(ctx, []string{"k"}); !errors.As(err, &apiErr) {
		t.Fatalf("DeleteMany answered 200 success:false = %v; want an APIError", err)
	}
	// A stored value that looks like an envelope is still a value.
	got, err := r.store.Get(ctx, "k")
	if err != nil || string(got) != `{"success":false}` {
		t.Fatalf("Get of a value shaped like an envelope = %q, %v", got, err)
	}
}
