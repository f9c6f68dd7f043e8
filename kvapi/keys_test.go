package kvapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

type listedKey struct {
	Name       string `json:"name"`
	Expiration int64  `json:"expiration"`
}

// listPage asks for one page of keys.
func (a *api) listPage(query url.Values) (response, []listedKey) {
	a.t.Helper()
	r := a.do("GET", nsPath("keys?"+query.Encode()), nil)
	var keys []listedKey
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.env.Result, &keys); err != nil {
			a.t.Fatalf("keys result %s: %v", r.env.Result, err)
		}
		if r.env.ResultInfo == nil || r.env.ResultInfo.Count != len(keys) {
			a.t.Fatalf("result_info %+v does not count the %d keys", r.env.ResultInfo, len(keys))
		}
	}
	return r, keys
}

// listAll follows cursors until the API returns cursor "".
func (a *api) listAll(prefix string, limit int) (names []string, pages int) {
	a.t.Helper()
	cursor := ""
	for {
		q := url.Values{"prefix": {prefix}, "limit": {fmt.Sprint(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r, keys := a.listPage(q)
		wantOK(a.t, "list", r)
		pages++
		for _, k := range keys {
			names = append(names, k.Name)
		}
		if cursor = r.env.ResultInfo.Cursor; cursor == "" {
			return names, pages
		}
		if pages > 10_000 {
			a.t.Fatal("listing never ended")
		}
	}
}

func seed(t *testing.T, a *api, n int, prefix string) []string {
	t.Helper()
	keys := make([]string, n)
	entries := make([]kv.Entry, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%04d", prefix, i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte("v")}
	}
	if err := a.mem.PutMany(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestListKeys(t *testing.T) {
	a := newAPI(t, nil)
	want := seed(t, a, 25, "k:")
	seed(t, a, 3, "other:")
	exp := a.clk.Now().Add(time.Hour).Truncate(time.Second)
	if err := a.mem.Put(t.Context(), "k:0003", []byte("v"), kv.PutOptions{Expiration: exp}); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{10, 11, 24, 25, 1000} {
		got, pages := a.listAll("k:", limit)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d listed %q", limit, got)
		}
		if wantPages := (25 + limit - 1) / limit; pages != wantPages {
			t.Fatalf("limit %d took %d pages, want %d", limit, pages, wantPages)
		}
	}
	r, keys := a.listPage(url.Values{"prefix": {"k:"}, "limit": {"10"}})
	if r.env.ResultInfo.Cursor == "" || len(keys) != 10 || keys[3].Expiration != exp.Unix() || keys[2].Expiration != 0 {
		t.Fatalf("first page %+v info %+v; want 10 keys with k:0003's expiration and a cursor", keys, r.env.ResultInfo)
	}
	// Without a limit, up to 1000 keys.
	all := seed(t, a, 1001, "l:")
	r, keys = a.listPage(url.Values{"prefix": {"l:"}})
	if len(keys) != 1000 || r.env.ResultInfo.Cursor == "" {
		t.Fatalf("default page: %d keys, cursor %q", len(keys), r.env.ResultInfo.Cursor)
	}
	r, keys = a.listPage(url.Values{"prefix": {"l:"}, "cursor": {r.env.ResultInfo.Cursor}})
	if len(keys) != 1 || keys[0].Name != all[1000] || r.env.ResultInfo.Cursor != "" {
		t.Fatalf("last page %+v, cursor %q", keys, r.env.ResultInfo.Cursor)
	}

	for _, limit := range []string{"0", "1", "9", "1001", "-1", "ten", "10.5"} {
		r, _ := a.listPage(url.Values{"limit": {limit}})
		wantError(t, "limit "+limit, r, http.StatusBadRequest, kvapi.CodeInvalidLimit)
	}
	for _, cursor := range []string{"!!", "AAAA", "bm90IGEgY3Vyc29y"} {
		r, _ := a.listPage(url.Values{"cursor": {cursor}})
		wantError(t, "cursor "+cursor, r, http.StatusBadRequest, kvapi.CodeInvalidCursor)
	}
	// A cursor is bound to its prefix.
	r, _ = a.listPage(url.Values{"prefix": {"k:"}, "limit": {"10"}})
	r, _ = a.listPage(url.Values{"prefix": {"l:"}, "cursor": {r.env.ResultInfo.Cursor}})
	wantError(t, "cursor of another prefix", r, http.StatusBadRequest, kvapi.CodeInvalidCursor)
}

// TestEmptyPages: with the fault on, every page that is not the last comes
// first as an empty page with a cursor; following cursors still lists all.
func TestEmptyPages(t *testing.T) {
	a := newAPI(t, nil)
	want := seed(t, a, 25, "k:")
	a.server.Faults().SetEmptyListPages(true)
	r, keys := a.listPage(url.Values{"prefix": {"k:"}, "limit": {"10"}})
	if len(keys) != 0 || r.env.ResultInfo.Cursor == "" {
		t.Fatalf("first page: %d keys, cursor %q; want an empty page with a cursor", len(keys), r.env.ResultInfo.Cursor)
	}
	got, pages := a.listAll("k:", 10)
	if !slices.Equal(got, want) || pages != 5 {
		t.Fatalf("listed %d keys in %d pages; want 25 in 5 (two empty)", len(got), pages)
	}
	a.server.Faults().SetEmptyListPages(false)
	if _, pages := a.listAll("k:", 10); pages != 3 {
		t.Fatalf("fault off: %d pages, want 3", pages)
	}
}

// plainStore hides memory's optional abilities, and lists names alone: the
// server must do with the four operations.
type plainStore struct{ kv.Store }

func (p plainStore) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	res, err := p.Store.List(ctx, opts)
	res.Info = nil
	return res, err
}

func TestPlainStore(t *testing.T) {
	a := newAPI(t, nil)
	b := newAPI(t, plainStore{a.mem})
	exp := a.clk.Now().Add(time.Hour)
	if err := a.mem.Put(t.Context(), "k1", []byte("one"), kv.PutOptions{Expiration: exp}); err != nil {
		t.Fatal(err)
	}
	r, keys := b.listPage(url.Values{})
	wantOK(t, "list", r)
	if len(keys) != 1 || keys[0].Name != "k1" || keys[0].Expiration != 0 {
		t.Fatalf("keys %+v; want k1 without an expiry the store cannot tell", keys)
	}
	r = b.do("PUT", nsPath("bulk"), jsonBody(t, []map[string]any{{"key": "k2", "value": "two"}, {"key": "k3", "value": "three", "expiration_ttl": 60}}))
	wantOK(t, "bulk put", r)
	r = b.do("POST", nsPath("bulk/get"), jsonBody(t, map[string]any{"keys": []string{"k1", "k2", "k3", "nope"}}))
	wantOK(t, "bulk get", r)
	if string(r.env.Result) != `{"values":{"k1":"one","k2":"two","k3":"three","nope":null}}` {
		t.Fatalf("bulk get result %s", r.env.Result)
	}
	wantOK(t, "bulk delete", b.do("POST", nsPath("bulk/delete"), jsonBody(t, []string{"k1", "k2"})))
	if n := a.mem.Len(); n != 1 {
		t.Fatalf("%d keys left, want 1", n)
	}
}
