package kvapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

type bulkResult struct {
	SuccessfulKeyCount int      `json:"successful_key_count"`
	UnsuccessfulKeys   []string `json:"unsuccessful_keys"`
}

func decodeResult[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.env.Result, &v); err != nil {
		t.Fatalf("result %s: %v", r.env.Result, err)
	}
	return v
}

func TestBulkWrite(t *testing.T) {
	a := newAPI(t, nil)
	now := a.clk.Now().Unix()
	r := a.do("PUT", nsPath("bulk"), jsonBody(t, []map[string]any{
		{"key": "text", "value": "plain"},
		{"key": "bin", "value": base64.StdEncoding.EncodeToString([]byte{0xff, 0, 1}), "base64": true},
		{"key": "ttl", "value": "t", "expiration_ttl": 120},
		{"key": "abs", "value": "a", "expiration": now + 600, "metadata": map[string]any{"m": 1}},
		{"key": "a/../b?#", "value": "odd"},
	}))
	wantOK(t, "bulk put", r)
	if res := decodeResult[bulkResult](t, r); res.SuccessfulKeyCount != 5 || res.UnsuccessfulKeys == nil || len(res.UnsuccessfulKeys) != 0 {
		t.Fatalf("bulk put result %s", r.env.Result)
	}
	for k, want := range map[string]string{"text": "plain", "bin": "\xff\x00\x01", "ttl": "t", "abs": "a", "a/../b?#": "odd"} {
		if got, err := a.mem.Get(t.Context(), k); err != nil || string(got) != want {
			t.Fatalf("server holds %q = %q, %v", k, got, err)
		}
	}
	for k, want := range map[string]int64{"ttl": now + 120, "abs": now + 600} {
		if e, _ := a.mem.GetEntry(t.Context(), k); e.Expiration.Unix() != want {
			t.Fatalf("%s expires at %v, want %d", k, e.Expiration, want)
		}
	}

	// A key named twice is written once, with its last value.
	r = a.do("PUT", nsPath("bulk"), jsonBody(t, []map[string]any{{"key": "dup", "value": "1"}, {"key": "dup", "value": "2"}}))
	if res := decodeResult[bulkResult](t, r); res.SuccessfulKeyCount != 1 {
		t.Fatalf("bulk put of a key twice: %s", r.env.Result)
	}
	if v, _ := a.mem.Get(t.Context(), "dup"); string(v) != "2" {
		t.Fatalf("dup = %q, want the last value", v)
	}

	// One bad pair refuses the whole batch.
	for name, c := range map[string]struct {
		pair   map[string]any
		status int
		code   int
	}{
		"no key":        {map[string]any{"value": "v"}, http.StatusBadRequest, kvapi.CodeInvalidRequest},
		"no value":      {map[string]any{"key": "k"}, http.StatusBadRequest, kvapi.CodeInvalidRequest},
		"illegal key":   {map[string]any{"key": "..", "value": "v"}, http.StatusBadRequest, kvapi.CodeIllegalKey},
		"long key":      {map[string]any{"key": strings.Repeat("k", 513), "value": "v"}, http.StatusRequestURITooLong, kvapi.CodeKeyTooLong},
		"bad base64":    {map[string]any{"key": "k", "value": "!!", "base64": true}, http.StatusBadRequest, kvapi.CodeMalformedValue},
		"short ttl":     {map[string]any{"key": "k", "value": "v", "expiration_ttl": 30}, http.StatusBadRequest, kvapi.CodeExpirationTTL},
		"past":          {map[string]any{"key": "k", "value": "v", "expiration": now - 1}, http.StatusBadRequest, kvapi.CodeExpiration},
		"big metadata":  {map[string]any{"key": "k", "value": "v", "metadata": strings.Repeat("m", 2000)}, http.StatusRequestEntityTooLarge, kvapi.CodeMetadata},
		"value too big": {map[string]any{"key": "k", "value": strings.Repeat("v", kv.MaxValueSize+1)}, http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge},
	} {
		body := jsonBody(t, []map[string]any{{"key": "fresh", "value": "v"}, c.pair})
		wantError(t, name, a.do("PUT", nsPath("bulk"), body), c.status, c.code)
	}
	wantError(t, "not JSON", a.do("PUT", nsPath("bulk"), []byte("[{")), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "an object", a.do("PUT", nsPath("bulk"), []byte(`{"key":"k"}`)), http.StatusBadRequest, kvapi.CodeInvalidRequest)

	// The limit is 10,000 pairs a request.
	pairs := make([]map[string]any, kvapi.MaxBulkWrite+1)
	for i := range pairs {
		pairs[i] = map[string]any{"key": fmt.Sprintf("n%05d", i), "value": "v"}
	}
	wantError(t, "10,001 pairs", a.do("PUT", nsPath("bulk"), jsonBody(t, pairs)), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	if _, err := a.mem.Get(t.Context(), "fresh"); err == nil {
		t.Fatal("a refused batch wrote its good pairs")
	}
	r = a.do("PUT", nsPath("bulk"), jsonBody(t, pairs[:kvapi.MaxBulkWrite]))
	wantOK(t, "10,000 pairs", r)
	if res := decodeResult[bulkResult](t, r); res.SuccessfulKeyCount != kvapi.MaxBulkWrite {
		t.Fatalf("10,000 pairs: %s", r.env.Result)
	}

	// Bulk delete, the current POST and the older DELETE.
	keys := make([]string, kvapi.MaxBulkWrite)
	for i := range keys {
		keys[i] = fmt.Sprintf("n%05d", i)
	}
	wantError(t, "delete 10,001", a.do("POST", nsPath("bulk/delete"), jsonBody(t, append(keys, "x"))), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "delete illegal key", a.do("POST", nsPath("bulk/delete"), jsonBody(t, []string{"ok", "."})), http.StatusBadRequest, kvapi.CodeIllegalKey)
	r = a.do("POST", nsPath("bulk/delete"), jsonBody(t, append(keys[:5000:5000], "never-there")))
	wantOK(t, "delete 5,001", r)
	if res := decodeResult[bulkResult](t, r); res.SuccessfulKeyCount != 5001 {
		t.Fatalf("bulk delete result %s", r.env.Result)
	}
	wantOK(t, "older DELETE bulk", a.do("DELETE", nsPath("bulk"), jsonBody(t, keys[5000:])))
	if n := a.mem.Len(); n != 6 {
		t.Fatalf("%d keys left, want dup and the first 5", n)
	}
}

func TestBulkGet(t *testing.T) {
	a := newAPI(t, nil)
	exp := a.clk.Now().Add(time.Hour).Truncate(time.Second)
	ctx := t.Context()
	for k, v := range map[string]string{"text": "plain", "json": `{"a":[1,2]}`, "bin": "\xff\x00"} {
		if err := a.mem.Put(ctx, k, []byte(v), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.mem.Put(ctx, "exp", []byte("1"), kv.PutOptions{Expiration: exp}); err != nil {
		t.Fatal(err)
	}
	get := func(body any) response { return a.do("POST", nsPath("bulk/get"), jsonBody(t, body)) }

	r := get(map[string]any{"keys": []string{"text", "json", "bin", "missing"}})
	wantOK(t, "bulk get", r)
	values := decodeResult[struct{ Values map[string]*string }](t, r).Values
	if *values["text"] != "plain" || *values["json"] != `{"a":[1,2]}` || *values["bin"] != "\uFFFD\x00" || values["missing"] != nil {
		t.Fatalf("text values %s", r.env.Result)
	}
	if _, ok := values["missing"]; !ok {
		t.Fatal("a missing key must be listed with null")
	}

	r = get(map[string]any{"keys": []string{"json", "exp"}, "type": "json", "withMetadata": true})
	wantOK(t, "bulk get json withMetadata", r)
	if want := fmt.Sprintf(`{"values":{"exp":{"value":1,"metadata":null,"expiration":%d},"json":{"value":{"a":[1,2]},"metadata":null}}}`, exp.Unix()); string(r.env.Result) != want {
		t.Fatalf("result %s\nwant   %s", r.env.Result, want)
	}
	wantError(t, "json of a text value", get(map[string]any{"keys": []string{"text"}, "type": "json"}), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "bad type", get(map[string]any{"keys": []string{"text"}, "type": "xml"}), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "illegal key", get(map[string]any{"keys": []string{".."}}), http.StatusBadRequest, kvapi.CodeIllegalKey)

	keys := make([]string, kvapi.MaxBulkGet+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
	}
	wantError(t, "101 keys", get(map[string]any{"keys": keys}), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantOK(t, "100 keys", get(map[string]any{"keys": keys[:100]}))
}
