package kvtest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

func testNamespaces(t *testing.T, h Harness) {
	s := h.New(t)
	ns := func(module string) *kv.Namespaced {
		n, err := kv.Namespace(s, module)
		if err != nil {
			t.Fatalf("Namespace(%q): %v", module, err)
		}
		return n
	}
	wordle, trading, emoji := ns("wordle"), ns("trading"), ns("loldle-emoji")
	mustPut(t, wordle, "games:1", []byte("w1"), kv.PutOptions{})
	mustPut(t, wordle, "games:2", []byte("w2"), kv.PutOptions{TTL: time.Hour})
	mustPut(t, wordle, "stats", []byte("ws"), kv.PutOptions{})
	mustPut(t, trading, "games:1", []byte("t1"), kv.PutOptions{})
	mustPut(t, trading, "wordle:games:1", []byte("inside trading"), kv.PutOptions{})
	mustPut(t, emoji, "x", []byte("e"), kv.PutOptions{})

	// Keys are stored with their module prefix.
	wantValue(t, s, "wordle:games:1", []byte("w1"))
	wantValue(t, s, "trading:games:1", []byte("t1"))
	wantValue(t, s, "trading:wordle:games:1", []byte("inside trading"))
	wantValue(t, s, "loldle-emoji:x", []byte("e"))
	wantValue(t, wordle, "games:1", []byte("w1"))
	wantValue(t, trading, "games:1", []byte("t1"))

	// Listing strips the prefix, and two-level prefixes round-trip.
	equalKeys(t, "wordle List", listAll(t, wordle, "", 0), []string{"games:1", "games:2", "stats"})
	equalKeys(t, "wordle List games:", listAll(t, wordle, "games:", 1), []string{"games:1", "games:2"})
	equalKeys(t, "trading List", listAll(t, trading, "", 0), []string{"games:1", "wordle:games:1"})

	// Cursors are bound to their namespace and prefix.
	page, err := trading.List(ctx(t), kv.ListOptions{Limit: 1})
	if err != nil || page.Done {
		t.Fatalf("trading List(limit 1) = done %v, %v", page.Done, err)
	}
	for what, c := range map[string]kv.ListOptions{
		"another namespace's cursor": {Limit: 1, Cursor: page.Cursor},
		"a raw store cursor":         {Cursor: kv.EncodeCursor("trading:games:1")},
		"a forged cursor":            {Cursor: "n1." + strings.Repeat("A", 12)},
	} {
		if _, err := wordle.List(ctx(t), c); !errors.Is(err, kv.ErrInvalidCursor) {
			t.Fatalf("wordle List with %s = %v, want kv.ErrInvalidCursor", what, err)
		}
	}
	if _, err := trading.List(ctx(t), kv.ListOptions{Prefix: "games:", Cursor: page.Cursor}); !errors.Is(err, kv.ErrInvalidCursor) {
		t.Fatalf("List with a cursor from another prefix = %v, want kv.ErrInvalidCursor", err)
	}

	// Deleting in one namespace leaves the other alone.
	if err := wordle.Delete(ctx(t), "games:1"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, wordle, "games:1")
	wantValue(t, trading, "games:1", []byte("t1"))

	// Invalid module names and keys too long once prefixed are refused.
	for _, m := range []string{"", "Wordle", "a:b", "a b", "wordle:", "é", "a/b", "a.b"} {
		if _, err := kv.Namespace(s, m); !errors.Is(err, kv.ErrInvalidNamespace) {
			t.Fatalf("Namespace(%q) = %v, want kv.ErrInvalidNamespace", m, err)
		}
	}
	long := strings.Repeat("k", kv.MaxKeySize-len("wordle:")+1)
	if err := wordle.Put(ctx(t), long, []byte("v"), kv.PutOptions{}); !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("Put(key too long with prefix) = %v, want kv.ErrInvalidKey", err)
	}
	mustPut(t, wordle, long[1:], []byte("v"), kv.PutOptions{})

	// The raw store sees every namespace, in byte order.
	all := listAll(t, s, "", 0)
	if !slices.IsSorted(all) || len(all) != 6 {
		t.Fatalf("raw List = %q, want 6 sorted keys", all)
	}
}

func testBulk(t *testing.T, h Harness) {
	s := h.New(t)
	bp, canPut := s.(kv.BulkPutter)
	bg, canGet := s.(kv.BulkGetter)
	bd, canDelete := s.(kv.BulkDeleter)
	if !canPut && !canGet && !canDelete {
		t.Skip("store has no bulk abilities (optional)")
	}
	exp := h.now().Add(2 * time.Hour).Truncate(time.Second)
	entries := []kv.Entry{
		{Key: "b:1", Value: []byte("one")},
		{Key: "b:2", Value: []byte{0xff, 0}, Expiration: exp},
		{Key: "b:3", Value: []byte{}},
		{Key: "b:é/?#", Value: []byte("odd key")},
	}
	if canPut {
		if err := bp.PutMany(ctx(t), entries); err != nil {
			t.Fatalf("PutMany: %v", err)
		}
		if err := bp.PutMany(ctx(t), nil); err != nil {
			t.Fatalf("PutMany(nothing): %v", err)
		}
	} else {
		for _, e := range entries {
			mustPut(t, s, e.Key, e.Value, kv.PutOptions{Expiration: e.Expiration})
		}
	}
	for _, e := range entries {
		wantValue(t, s, e.Key, e.Value)
	}
	if canGet {
		got, err := bg.GetMany(ctx(t), []string{"b:1", "b:2", "b:3", "b:é/?#", "b:missing"})
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		slices.SortFunc(got, func(a, b kv.Entry) int { return strings.Compare(a.Key, b.Key) })
		if len(got) != len(entries) {
			t.Fatalf("GetMany returned %d entries, want %d (missing keys absent)", len(got), len(entries))
		}
		for i, e := range entries {
			g := got[i]
			if g.Key != e.Key || string(g.Value) != string(e.Value) {
				t.Fatalf("GetMany entry %d = %q=%s, want %q=%s", i, g.Key, describe(g.Value), e.Key, describe(e.Value))
			}
			if d := g.Expiration.Sub(e.Expiration); d < -time.Second || d > time.Second || g.Expiration.IsZero() != e.Expiration.IsZero() {
				t.Fatalf("GetMany %q expiration = %v, want %v", e.Key, g.Expiration, e.Expiration)
			}
		}
		if got, err := bg.GetMany(ctx(t), nil); err != nil || len(got) != 0 {
			t.Fatalf("GetMany(nothing) = %d, %v", len(got), err)
		}
	}
	if canDelete {
		if err := bd.DeleteMany(ctx(t), []string{"b:1", "b:3", "b:never"}); err != nil {
			t.Fatalf("DeleteMany: %v", err)
		}
		equalKeys(t, "List after DeleteMany", listAll(t, s, "b:", 0), []string{"b:2", "b:é/?#"})
	}
}
