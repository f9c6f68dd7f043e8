package kv_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"", ".", "..", "...", "a", "wordle:games:1", "a\xffb", strings.Repeat("k", 513), "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := kv.ValidateKey(key)
		valid := key != "" && len(key) <= kv.MaxKeySize && key != "." && key != ".." && utf8.ValidString(key)
		if valid != (err == nil) {
			t.Fatalf("ValidateKey(%q) = %v, want valid=%v", key, err, valid)
		}
		if err != nil && !errors.Is(err, kv.ErrInvalidKey) {
			t.Fatalf("ValidateKey(%q) = %v, not kv.ErrInvalidKey", key, err)
		}
	})
}

// FuzzNamespace checks that whatever a namespaced caller passes as key and
// prefix, its writes land under its own prefix and its listings return
// exactly its own keys, stripped.
func FuzzNamespace(f *testing.F) {
	f.Add("wordle", "games:1", "games:")
	f.Add("a", "../b:c", "")
	f.Add("loldle-emoji", "trading:x", "trading:")
	f.Fuzz(func(t *testing.T, module, key, prefix string) {
		store := memory.New(memory.Config{})
		other, err := kv.Namespace(store, "zz-other")
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Put(t.Context(), key, []byte("other"), kv.PutOptions{}); err != nil && !errors.Is(err, kv.ErrInvalidKey) {
			t.Fatalf("other Put: %v", err)
		}
		ns, err := kv.Namespace(store, module)
		if err != nil {
			if !errors.Is(err, kv.ErrInvalidNamespace) {
				t.Fatalf("Namespace(%q) = %v", module, err)
			}
			return
		}
		if err := ns.Put(t.Context(), key, []byte("mine"), kv.PutOptions{}); err != nil {
			if !errors.Is(err, kv.ErrInvalidKey) {
				t.Fatalf("Put(%q) = %v", key, err)
			}
			return
		}
		if v, err := store.Get(t.Context(), module+":"+key); err != nil || string(v) != "mine" {
			t.Fatalf("raw Get(%q) = %q, %v", module+":"+key, v, err)
		}
		res, err := ns.List(t.Context(), kv.ListOptions{Prefix: prefix})
		if err != nil {
			if !errors.Is(err, kv.ErrInvalidPrefix) {
				t.Fatalf("List(%q) = %v", prefix, err)
			}
			return
		}
		want := 0
		if strings.HasPrefix(key, prefix) {
			want = 1
		}
		if module == "zz-other" {
			return // same namespace: both writes are this module's
		}
		if len(res.Keys) != want || (want == 1 && res.Keys[0] != key) {
			t.Fatalf("List(prefix %q) = %q, want only %q", prefix, res.Keys, key)
		}
	})
}

// FuzzCursor feeds arbitrary cursors to a raw and a namespaced listing: they
// are either refused with kv.ErrInvalidCursor or list only keys under the
// caller's prefix; never a panic, never a leak.
func FuzzCursor(f *testing.F) {
	f.Add("", "")
	f.Add(kv.EncodeCursor("trading:a"), "wordle:")
	f.Add("n1.d29yZGxlAAB0cmFkaW5nOmE", "")
	f.Add("k1.////", "a")
	store := memory.New(memory.Config{})
	for _, k := range []string{"trading:a", "trading:b", "wordle:a", "wordle:b", "x"} {
		if err := store.Put(f.Context(), k, []byte("v"), kv.PutOptions{}); err != nil {
			f.Fatal(err)
		}
	}
	wordle, err := kv.Namespace(store, "wordle")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cursor, prefix string) {
		if res, err := store.List(t.Context(), kv.ListOptions{Prefix: prefix, Cursor: cursor, Limit: 1}); err == nil {
			for _, k := range res.Keys {
				if !strings.HasPrefix(k, prefix) {
					t.Fatalf("raw List(prefix %q, cursor %q) returned %q", prefix, cursor, k)
				}
			}
			if !res.Done {
				if _, err := kv.DecodeCursor(res.Cursor, prefix); err != nil {
					t.Fatalf("store issued a cursor it refuses: %v", err)
				}
			}
		} else if !errors.Is(err, kv.ErrInvalidCursor) && !errors.Is(err, kv.ErrInvalidPrefix) {
			t.Fatalf("raw List error %v", err)
		}
		res, err := wordle.List(t.Context(), kv.ListOptions{Prefix: prefix, Cursor: cursor})
		if err != nil {
			if !errors.Is(err, kv.ErrInvalidCursor) && !errors.Is(err, kv.ErrInvalidPrefix) {
				t.Fatalf("namespaced List error %v", err)
			}
			return
		}
		for _, k := range res.Keys {
			if k != "a" && k != "b" {
				t.Fatalf("namespaced List(cursor %q) leaked %q", cursor, k)
			}
		}
	})
}
