package kvapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// TestHead: HEAD on a value answers as GET does, headers and all, without
// the body.
func TestHead(t *testing.T) {
	a := newAPI(t, nil)
	wantOK(t, "PUT", a.do("PUT", nsPath("values/k?expiration_ttl=120"), []byte("hello")))
	r := a.do("HEAD", nsPath("values/k"), nil)
	if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("Content-Length") != "5" || r.header.Get("Expiration") == "" {
		t.Fatalf("HEAD = %d %q %v", r.status, r.body, r.header)
	}
	if r := a.do("HEAD", nsPath("values/missing"), nil); r.status != http.StatusNotFound || len(r.body) != 0 {
		t.Fatalf("HEAD of a missing key = %d %q", r.status, r.body)
	}
}

func TestBulkGetCorners(t *testing.T) {
	a := newAPI(t, nil)
	get := func(body string) response { return a.do("POST", nsPath("bulk/get"), []byte(body)) }
	r := get(`{"keys":[]}`)
	wantError(t, "no keys", r, http.StatusBadRequest, kvapi.CodeInvalidRequest)
	if r.message != "You must request a minimum of 1 key" {
		t.Fatalf("no keys: message %q", r.message)
	}
	wantError(t, "no keys field", get(`{}`), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "a key twice", get(`{"keys":["a","b","a"]}`), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "trailing data", get(`{"keys":["a"]}x`), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "two documents", get(`{"keys":["a"]}{"keys":["b"]}`), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantOK(t, "trailing white space", get(`{"keys":["a"]}`+" \n\t"))
}

// TestLongPrefix: a prefix longer than any key is 414, as a long key is.
func TestLongPrefix(t *testing.T) {
	a := newAPI(t, nil)
	r, _ := a.listPage(url.Values{"prefix": {strings.Repeat("p", kv.MaxKeySize+1)}})
	wantError(t, "prefix of 513 bytes", r, http.StatusRequestURITooLong, kvapi.CodeKeyTooLong)
	r, _ = a.listPage(url.Values{"prefix": {strings.Repeat("p", kv.MaxKeySize)}})
	wantOK(t, "prefix of 512 bytes", r)
}

// TestBodyKeysUTF8: a key in a bulk body that is not valid UTF-8 (a raw
// byte or a lone surrogate escape) is refused, not decoded with U+FFFD,
// which would make two keys one; a key that spells U+FFFD itself is a key.
func TestBodyKeysUTF8(t *testing.T) {
	a := newAPI(t, nil)
	for name, key := range map[string]string{"raw byte": "a\xffb", "lone surrogate": `a\ud800b`, "escaped and raw": `\ufffd` + "\xff"} {
		wantError(t, "write "+name, a.do("PUT", nsPath("bulk"), []byte(`[{"key":"`+key+`","value":"v"}]`)), http.StatusBadRequest, kvapi.CodeIllegalKey)
		wantError(t, "delete "+name, a.do("POST", nsPath("bulk/delete"), []byte(`["ok","`+key+`"]`)), http.StatusBadRequest, kvapi.CodeIllegalKey)
		wantError(t, "get "+name, a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["`+key+`"]}`)), http.StatusBadRequest, kvapi.CodeIllegalKey)
	}
	if n := a.mem.Len(); n != 0 {
		t.Fatalf("%d keys written", n)
	}
	wantOK(t, "U+FFFD spelled", a.do("PUT", nsPath("bulk"), []byte(`[{"key":"a\ufffd","value":"1"},{"key":"b`+"\uFFFD"+`","value":"2"},{"key":"c\\ufffd","value":"3"}]`)))
	for _, k := range []string{"a\uFFFD", "b\uFFFD", `c\ufffd`} {
		if _, err := a.mem.Get(t.Context(), k); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
	}
}
