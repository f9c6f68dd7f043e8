package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

func ctx(t *testing.T) context.Context { return t.Context() }

func mustPut(t *testing.T, s kv.Store, key string, value []byte, opts kv.PutOptions) {
	t.Helper()
	if err := s.Put(ctx(t), key, value, opts); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func wantValue(t *testing.T, s kv.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v, want value", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %s, want %s", key, describe(got), describe(want))
	}
}

func wantMissing(t *testing.T, s kv.Store, key string) {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("Get(%q) = %s, %v; want kv.ErrNotFound", key, describe(got), err)
	}
}

// describe shows a value without flooding the log with a 25 MiB one.
func describe(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) > 64 {
		return fmt.Sprintf("%d bytes starting %q", len(b), b[:32])
	}
	return fmt.Sprintf("%q", b)
}

// listAll pages through prefix with limit until Done and checks each page's
// shape on the way.
func listAll(t *testing.T, s kv.Store, prefix string, limit int) []string {
	t.Helper()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100_000 {
			t.Fatalf("List(%q, limit %d) never reported Done", prefix, limit)
		}
		res, err := s.List(ctx(t), kv.ListOptions{Prefix: prefix, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("List(%q, limit %d, page %d): %v", prefix, limit, pages, err)
		}
		max := limit
		if max == 0 {
			max = kv.DefaultListLimit
		}
		if len(res.Keys) > max {
			t.Fatalf("List(limit %d) returned %d keys", limit, len(res.Keys))
		}
		if res.Info != nil && len(res.Info) != len(res.Keys) {
			t.Fatalf("List returned %d keys with %d infos, want one info a key or none", len(res.Keys), len(res.Info))
		}
		all = append(all, res.Keys...)
		if res.Done {
			if res.Cursor != "" {
				t.Fatalf("List: Done with cursor %q, want empty", res.Cursor)
			}
			return all
		}
		if res.Cursor == "" {
			t.Fatalf("List: not Done and no cursor")
		}
		cursor = res.Cursor
	}
}

func equalKeys(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d keys, want %d\n got: %q\nwant: %q", what, len(got), len(want), head(got), head(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: key %d is %q, want %q", what, i, got[i], want[i])
		}
	}
}

func head(keys []string) []string {
	if len(keys) > 20 {
		return keys[:20]
	}
	return keys
}

// seed writes keys with value "v", in bulk when the store can.
func seed(t *testing.T, s kv.Store, keys []string) {
	t.Helper()
	if bp, ok := s.(kv.BulkPutter); ok {
		entries := make([]kv.Entry, len(keys))
		for i, k := range keys {
			entries[i] = kv.Entry{Key: k, Value: []byte("v")}
		}
		if err := bp.PutMany(ctx(t), entries); err != nil {
			t.Fatalf("PutMany(%d entries): %v", len(entries), err)
		}
		return
	}
	for _, k := range keys {
		mustPut(t, s, k, []byte("v"), kv.PutOptions{})
	}
}
