package cfkv_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
)

// listAll pages through prefix until Done and counts the calls.
func listAll(t *testing.T, s kv.Store, prefix string, limit int) (keys []string, calls int) {
	t.Helper()
	cursor := ""
	for {
		calls++
		if calls > 10_000 {
			t.Fatalf("List(%q, limit %d) never reported Done", prefix, limit)
		}
		res, err := s.List(t.Context(), kv.ListOptions{Prefix: prefix, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("List(%q, limit %d, call %d): %v", prefix, limit, calls, err)
		}
		if len(res.Keys) > limit {
			t.Fatalf("List(limit %d) returned %d keys", limit, len(res.Keys))
		}
		keys = append(keys, res.Keys...)
		if res.Done {
			return keys, calls
		}
		cursor = res.Cursor
	}
}

func seedKeys(t *testing.T, r *rig, n int, prefix string) []string {
	t.Helper()
	keys := make([]string, n)
	entries := make([]kv.Entry, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%03d", prefix, i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte("v")}
	}
	if err := r.mem.PutMany(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestListOneRequestPerCall: each List call is one API request, whatever
// the limit, including limits below the API's minimum of 10.
func TestListOneRequestPerCall(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	want := seedKeys(t, r, 25, "k:")
	seedKeys(t, r, 5, "other:")
	for _, limit := range []int{1, 3, 9, 10, 11, 25, 1000} {
		before := r.server.Requests()
		got, calls := listAll(t, r.store, "k:", limit)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %q, want %q", limit, got, want)
		}
		if n := r.server.Requests() - before; n != int64(calls) {
			t.Fatalf("limit %d: %d List calls made %d requests", limit, calls, n)
		}
		if wantCalls := (25 + limit - 1) / limit; calls > wantCalls {
			t.Fatalf("limit %d: %d calls, want at most %d", limit, calls, wantCalls+1)
		}
	}
}

// TestListThroughEmptyPages: Workers KV may answer a page with no keys and a
// cursor. The SDK's auto-pager stops there; List carries on.
func TestListThroughEmptyPages(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	want := seedKeys(t, r, 35, "k:")
	r.server.Faults().SetEmptyListPages(true)
	for _, limit := range []int{1, 7, 10, 12, 1000} {
		got, _ := listAll(t, r.store, "k:", limit)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d through empty pages: listed %d keys, want %d", limit, len(got), len(want))
		}
	}

	// The SDK's ListAutoPaging on the same server loses everything after
	// the first empty page: why List paginates by hand.
	api := cf.NewNamespaceService(option.WithBaseURL(r.url+"/client/v4/"), option.WithAPIToken(testToken), option.WithMaxRetries(0))
	var params cf.NamespaceKeyListParams
	params.AccountID.Value = testAccount
	params.Prefix.Value, params.Prefix.Present = "k:", true
	params.Limit.Value, params.Limit.Present = 10, true
	pager := api.Keys.ListAutoPaging(t.Context(), testNamespace, params)
	n := 0
	for pager.Next() {
		n++
	}
	if n >= len(want) {
		t.Fatalf("the SDK's auto-pager listed %d keys through empty pages; the workaround may be obsolete", n)
	}
}

// TestListCursor: a cursor is this store's, bound to its prefix, and stays
// right while keys change before it.
func TestListCursor(t *testing.T) {
	r := newRig(t, clock.NewFake(start), nil)
	ctx := t.Context()
	seedKeys(t, r, 12, "k:")
	page, err := r.store.List(ctx, kv.ListOptions{Prefix: "k:", Limit: 3})
	if err != nil || page.Done || !slices.Equal(page.Keys, []string{"k:000", "k:001", "k:002"}) {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	// Keys added before the cursor and the cursor's own key deleted.
	for _, k := range []string{"k:0005", "k:0015"} {
		if err := r.store.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.store.Delete(ctx, "k:002"); err != nil {
		t.Fatal(err)
	}
	next, err := r.store.List(ctx, kv.ListOptions{Prefix: "k:", Limit: 3, Cursor: page.Cursor})
	if err != nil || !slices.Equal(next.Keys, []string{"k:003", "k:004", "k:005"}) {
		t.Fatalf("page after changes before the cursor = %q, %v; want k:003..k:005", next.Keys, err)
	}

	for name, cursor := range map[string]string{
		"other prefix":    page.Cursor,
		"memory cursor":   kv.EncodeCursor("k:001"),
		"garbage":         "c1.!!!",
		"truncated":       page.Cursor[:len(page.Cursor)-3],
		"forged position": "c1." + base64.RawURLEncoding.EncodeToString([]byte("\x02k:\x05k:001\x03forged-api-cursor")),
	} {
		prefix := "k:"
		if name == "other prefix" {
			prefix = "j:"
		}
		before := r.server.Requests()
		_, err := r.store.List(ctx, kv.ListOptions{Prefix: prefix, Limit: 3, Cursor: cursor})
		if !errors.Is(err, kv.ErrInvalidCursor) {
			t.Errorf("List with a %s cursor = %v, want kv.ErrInvalidCursor", name, err)
		}
		var apiErr *cfkv.APIError
		if name == "forged position" && (!errors.As(err, &apiErr) || r.server.Requests() == before) {
			t.Errorf("a forged API cursor should be refused by the API, got %v", err)
		}
	}
}
