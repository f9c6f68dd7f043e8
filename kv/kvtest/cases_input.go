package kvtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// badKeys are refused with kv.ErrInvalidKey by every operation.
var badKeys = map[string]string{
	"empty":        "",
	"dot":          ".",
	"dotdot":       "..",
	"too long":     strings.Repeat("k", kv.MaxKeySize+1),
	"invalid utf8": "a\xffb",
}

func testInvalidInput(t *testing.T, h Harness) {
	s := h.New(t)
	want := func(what string, err, target error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("%s = %v, want %v", what, err, target)
		}
		if err != nil && strings.Contains(err.Error(), "\xff") {
			t.Fatalf("%s: error message carries raw invalid bytes", what)
		}
	}
	for name, k := range badKeys {
		_, err := s.Get(ctx(t), k)
		want("Get("+name+")", err, kv.ErrInvalidKey)
		want("Put("+name+")", s.Put(ctx(t), k, []byte("v"), kv.PutOptions{}), kv.ErrInvalidKey)
		want("Delete("+name+")", s.Delete(ctx(t), k), kv.ErrInvalidKey)
	}
	// The longest key is fine.
	longest := strings.Repeat("k", kv.MaxKeySize)
	mustPut(t, s, longest, []byte("v"), kv.PutOptions{})
	wantValue(t, s, longest, []byte("v"))
	mustPut(t, s, "...", []byte("v"), kv.PutOptions{})

	want("Put(25 MiB + 1)", s.Put(ctx(t), "big", make([]byte, kv.MaxValueSize+1), kv.PutOptions{}), kv.ErrInvalidValue)
	wantMissing(t, s, "big")

	now := h.now()
	for name, opts := range map[string]kv.PutOptions{
		"TTL 59s":               {TTL: kv.MinTTL - time.Second},
		"TTL 1ns":               {TTL: 1},
		"TTL negative":          {TTL: -time.Hour},
		"TTL absurd":            {TTL: kv.MaxTTL + time.Hour},
		"expiration past":       {Expiration: now.Add(-time.Hour)},
		"expiration too soon":   {Expiration: now.Add(10 * time.Second)},
		"expiration absurd":     {Expiration: now.Add(kv.MaxTTL + time.Hour)},
		"TTL and expiration":    {TTL: time.Hour, Expiration: now.Add(time.Hour)},
		"expiration unix epoch": {Expiration: time.Unix(0, 0)},
	} {
		want("Put("+name+")", s.Put(ctx(t), "ttl", []byte("v"), opts), kv.ErrInvalidTTL)
	}
	wantMissing(t, s, "ttl")

	for name, c := range map[string]struct {
		opts   kv.ListOptions
		target error
	}{
		"limit -1":            {kv.ListOptions{Limit: -1}, kv.ErrInvalidLimit},
		"limit 1001":          {kv.ListOptions{Limit: kv.MaxListLimit + 1}, kv.ErrInvalidLimit},
		"prefix invalid utf8": {kv.ListOptions{Prefix: "\xff"}, kv.ErrInvalidPrefix},
		"prefix too long":     {kv.ListOptions{Prefix: strings.Repeat("p", kv.MaxKeySize+1)}, kv.ErrInvalidPrefix},
		"cursor garbage":      {kv.ListOptions{Cursor: "garbage!"}, kv.ErrInvalidCursor},
		"cursor base64 junk":  {kv.ListOptions{Cursor: "k1.////"}, kv.ErrInvalidCursor},
		"cursor namespaced":   {kv.ListOptions{Cursor: "n1.d29yZGxlAAAA"}, kv.ErrInvalidCursor},
	} {
		_, err := s.List(ctx(t), c.opts)
		want("List("+name+")", err, c.target)
	}

	if bg, ok := s.(kv.BulkGetter); ok {
		_, err := bg.GetMany(ctx(t), []string{"ok", ""})
		want("GetMany(with empty key)", err, kv.ErrInvalidKey)
	}
	if bp, ok := s.(kv.BulkPutter); ok {
		err := bp.PutMany(ctx(t), []kv.Entry{{Key: "bulk-ok", Value: []byte("v")}, {Key: "..", Value: []byte("v")}})
		want("PutMany(with key ..)", err, kv.ErrInvalidKey)
		err = bp.PutMany(ctx(t), []kv.Entry{{Key: "bulk-ok", Value: []byte("v"), Expiration: now.Add(time.Second)}})
		want("PutMany(expiring in 1s)", err, kv.ErrInvalidTTL)
		wantMissing(t, s, "bulk-ok") // a refused batch writes nothing
	}
	if bd, ok := s.(kv.BulkDeleter); ok {
		want("DeleteMany(with key .)", bd.DeleteMany(ctx(t), []string{"...", "."}), kv.ErrInvalidKey)
		wantValue(t, s, "...", []byte("v"))
	}
}
