package kvtest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

// orderKeys are keys whose UTF-8 byte order differs from naive orders: case,
// punctuation that URLs treat specially, whitespace, multi-byte runes.
var orderKeys = []string{
	"a", "A", "b", "B", "Z", "_", "~", "0", "9", "aa", "a a", "a\nb", "a\tb",
	"a:b", "a/b", "a/../b", "a%b", "a%2Fb", "a?b", "a#b", "a+b", "a&b", "a=b",
	"é", "e\u0301", "日本", "日", "😀", "\u00a0", "z\u00ff", "wordle:games:1",
}

func testListOrder(t *testing.T, h Harness) {
	s := h.New(t)
	for _, k := range orderKeys {
		mustPut(t, s, k, []byte(k), kv.PutOptions{})
	}
	want := slices.Clone(orderKeys)
	slices.Sort(want) // Go compares strings bytewise: UTF-8 byte order.
	equalKeys(t, "List", listAll(t, s, "", 0), want)
	equalKeys(t, "List limit 1", listAll(t, s, "", 1), want)
	for _, k := range orderKeys {
		wantValue(t, s, k, []byte(k))
	}
}

func testListPrefix(t *testing.T, h Harness) {
	s := h.New(t)
	for _, k := range []string{"wordle:games:1", "wordle:games:2", "wordle:stats", "wordlex", "word", "trading:a", "é:1", "éa"} {
		mustPut(t, s, k, []byte("v"), kv.PutOptions{})
	}
	for prefix, want := range map[string][]string{
		"wordle:":       {"wordle:games:1", "wordle:games:2", "wordle:stats"},
		"wordle:games:": {"wordle:games:1", "wordle:games:2"},
		"word":          {"word", "wordle:games:1", "wordle:games:2", "wordle:stats", "wordlex"},
		"é":             {"é:1", "éa"},
		"nothing":       nil,
		"wordle:stats":  {"wordle:stats"},
	} {
		equalKeys(t, fmt.Sprintf("List(prefix %q)", prefix), listAll(t, s, prefix, 0), want)
		equalKeys(t, fmt.Sprintf("List(prefix %q, limit 1)", prefix), listAll(t, s, prefix, 1), want)
	}
}

// testPagination lists with every limit at the edges of the range: small
// limits over a small prefix, the largest over more keys than a page holds.
func testPagination(t *testing.T, h Harness) {
	s := h.New(t)
	var small, large []string
	for i := range 25 {
		small = append(small, fmt.Sprintf("s:%03d", i))
	}
	for i := range h.PageKeys {
		large = append(large, fmt.Sprintf("l:%05d", i))
	}
	seed(t, s, append(slices.Clone(small), large...))

	for _, limit := range []int{1, 2, 3, 9, 10, 11, 24, 25, 26} {
		equalKeys(t, fmt.Sprintf("List(limit %d)", limit), listAll(t, s, "s:", limit), small)
	}
	for _, limit := range []int{0, 999, kv.MaxListLimit} {
		equalKeys(t, fmt.Sprintf("List(limit %d)", limit), listAll(t, s, "l:", limit), large)
	}
	// The first page of a listing of exactly its limit is full; what
	// follows is at most an empty, Done page.
	res, err := s.List(ctx(t), kv.ListOptions{Prefix: "s:", Limit: 25})
	if err != nil || len(res.Keys) != 25 {
		t.Fatalf("List(limit 25 of 25) = %d keys, %v", len(res.Keys), err)
	}
	// A cursor is bound to the prefix it was issued for.
	res, err = s.List(ctx(t), kv.ListOptions{Prefix: "s:", Limit: 5})
	if err != nil || res.Done {
		t.Fatalf("List(limit 5): done=%v, %v", res.Done, err)
	}
	if _, err := s.List(ctx(t), kv.ListOptions{Prefix: "l:", Cursor: res.Cursor}); !errors.Is(err, kv.ErrInvalidCursor) {
		t.Fatalf("List with a cursor issued for another prefix = %v, want kv.ErrInvalidCursor", err)
	}
	// A cursor stays valid while keys are added and deleted around it,
	// even the last key it returned.
	if err := s.Delete(ctx(t), "s:004"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "s:0045", []byte("v"), kv.PutOptions{})
	mustPut(t, s, "s:000a", []byte("v"), kv.PutOptions{})
	next, err := s.List(ctx(t), kv.ListOptions{Prefix: "s:", Limit: 5, Cursor: res.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	equalKeys(t, "page after a cursor whose key was deleted", next.Keys, append([]string{"s:0045"}, small[5:9]...))
}

func testConcurrentWriters(t *testing.T, h Harness) {
	s := h.New(t)
	const perWriter = 20
	var wg sync.WaitGroup
	errs := make(chan error, h.Writers*perWriter*2)
	for w := range h.Writers {
		wg.Go(func() {
			for i := range perWriter {
				own := fmt.Sprintf("w%02d:%03d", w, i)
				if err := s.Put(ctx(t), own, []byte(own), kv.PutOptions{}); err != nil {
					errs <- err
				}
				shared := fmt.Sprintf("shared:%d", i%4)
				if err := s.Put(ctx(t), shared, fmt.Appendf(nil, "w%02d", w), kv.PutOptions{}); err != nil {
					errs <- err
				}
				if i%5 == 4 {
					if err := s.Delete(ctx(t), own); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent write: %v", err)
	}
	var want []string
	for w := range h.Writers {
		for i := range perWriter {
			if i%5 != 4 {
				want = append(want, fmt.Sprintf("w%02d:%03d", w, i))
			}
		}
	}
	slices.Sort(want)
	got := listAll(t, s, "w", 0)
	equalKeys(t, "keys after concurrent writers", got, want)
	for _, k := range want {
		wantValue(t, s, k, []byte(k))
	}
	for i := range 4 {
		v, err := s.Get(ctx(t), fmt.Sprintf("shared:%d", i))
		if err != nil || len(v) != 3 || v[0] != 'w' {
			t.Fatalf("shared key %d = %q, %v; want one writer's whole value", i, v, err)
		}
	}
}
