package kvapi_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// client is the real cloudflare-go v6 client pointed at a.
func (a *api) client() *cf.NamespaceService {
	return cf.NewNamespaceService(option.WithBaseURL(a.url+"/client/v4/"), option.WithAPIToken(token), option.WithMaxRetries(0))
}

// multipartBody is a multipart PUT with a value and the given text fields.
func multipartBody(value string, fields map[string]string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, _ := w.CreateFormFile("value", "blob")
	_, _ = fw.Write([]byte(value))
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

// TestMetadataRoundTrip: metadata written on every write path reads back
// from every read path, through the real client where it reaches.
func TestMetadataRoundTrip(t *testing.T) {
	a := newAPI(t, nil)
	ctx := t.Context()
	c := a.client()
	var acc = cf.NamespaceMetadataGetParams{}.AccountID
	acc.Value, acc.Present = account, true

	// A multipart PUT, the form wrangler and cloudflare-go v0 send: the
	// metadata as one JSON field (the v6 SDK would flatten a map into form
	// fields, so it is sent as the one JSON string the API expects).
	body, ct := multipartBody("v1", map[string]string{"metadata": `{ "module": "wordle",  "n": 1 }`})
	wantOK(t, "multipart PUT", a.do("PUT", nsPath("values/one"), body, "Content-Type", ct))
	md, err := c.Metadata.Get(ctx, namespace, "one", cf.NamespaceMetadataGetParams{AccountID: acc})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(md); string(got) != `{"module":"wordle","n":1}` {
		t.Fatalf("metadata through the client = %s", got)
	}
	if e, _ := a.mem.GetEntry(ctx, "one"); string(e.Metadata) != `{"module":"wordle","n":1}` {
		t.Fatalf("stored metadata %s, want it compacted", e.Metadata)
	}

	// A bulk write with metadata on one pair, through the client.
	pairs := make([]cf.NamespaceBulkUpdateParamsBody, 2)
	pairs[0].Key.Value, pairs[0].Value.Value, pairs[0].Metadata.Value = "two", "v2", map[string]any{"tag": "b"}
	pairs[1].Key.Value, pairs[1].Value.Value = "three", "v3"
	for i := range pairs {
		pairs[i].Key.Present, pairs[i].Value.Present = true, true
	}
	pairs[0].Metadata.Present = true
	if _, err = c.BulkUpdate(ctx, namespace, cf.NamespaceBulkUpdateParams{AccountID: acc, Body: pairs}); err != nil {
		t.Fatal(err)
	}

	// The listing carries each key's metadata, and none for a key without.
	page, err := c.Keys.List(ctx, namespace, cf.NamespaceKeyListParams{AccountID: acc})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, k := range page.Result {
		raw, _ := json.Marshal(k.Metadata)
		listed[k.Name] = string(raw)
	}
	if want := map[string]string{"one": `{"module":"wordle","n":1}`, "two": `{"tag":"b"}`, "three": "null"}; !equalMaps(listed, want) {
		t.Fatalf("listed metadata %v, want %v", listed, want)
	}
	r := a.do("GET", nsPath("keys"), nil)
	if strings.Contains(string(r.env.Result), `"name":"three","metadata"`) {
		t.Fatalf("a key without metadata lists a metadata field: %s", r.env.Result)
	}

	// Bulk get withMetadata (raw: the typed result cannot hold a miss).
	r = a.do("POST", nsPath("bulk/get"), jsonBody(t, map[string]any{"keys": []string{"one", "two", "three"}, "withMetadata": true}))
	want := `{"values":{"one":{"value":"v1","metadata":{"module":"wordle","n":1}},"three":{"value":"v3","metadata":null},"two":{"value":"v2","metadata":{"tag":"b"}}}}`
	if string(r.env.Result) != want {
		t.Fatalf("bulk get withMetadata = %s\nwant %s", r.env.Result, want)
	}

	// A write without metadata clears it, as Workers KV does.
	wantOK(t, "raw PUT", a.do("PUT", nsPath("values/one"), []byte("plain")))
	if string(a.do("GET", nsPath("metadata/one"), nil).env.Result) != "null" {
		t.Fatal("a PUT without metadata kept the old metadata")
	}
	// JSON null is no metadata.
	body, ct = multipartBody("v", map[string]string{"metadata": "null"})
	wantOK(t, "metadata null", a.do("PUT", nsPath("values/null"), body, "Content-Type", ct))
	if e, _ := a.mem.GetEntry(ctx, "null"); e.Metadata != nil {
		t.Fatalf("metadata null stored as %q", e.Metadata)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestMetadataLimit: metadata over 1024 bytes is refused the same way on
// every write path, 413 with CodeMetadata; 1024 bytes pass; invalid JSON is
// a 400 with the same code. Nothing refused is stored.
func TestMetadataLimit(t *testing.T) {
	a := newAPI(t, nil)
	exact := `"` + strings.Repeat("m", kv.MaxMetadataSize-2) + `"`
	over := `"` + strings.Repeat("m", kv.MaxMetadataSize-1) + `"`
	huge := `"` + strings.Repeat("m", 10*kv.MaxMetadataSize) + `"`
	writes := map[string]func(md string) response{
		"multipart": func(md string) response {
			body, ct := multipartBody("v", map[string]string{"metadata": md})
			return a.do("PUT", nsPath("values/k"), body, "Content-Type", ct)
		},
		"bulk": func(md string) response {
			return a.do("PUT", nsPath("bulk"), []byte(`[{"key":"k","value":"v","metadata":`+md+`}]`))
		},
	}
	for path, write := range writes {
		wantOK(t, path+" 1024 bytes", write(exact))
		wantError(t, path+" 1025 bytes", write(over), http.StatusRequestEntityTooLarge, kvapi.CodeMetadata)
		wantError(t, path+" 10 KiB", write(huge), http.StatusRequestEntityTooLarge, kvapi.CodeMetadata)
		if path == "multipart" {
			wantError(t, path+" not JSON", write(`{x`), http.StatusBadRequest, kvapi.CodeMetadata)
		}
		if e, _ := a.mem.GetEntry(t.Context(), "k"); string(e.Metadata) != exact {
			t.Fatalf("%s: a refused write replaced the metadata", path)
		}
	}
}

// TestMetadataUnsupported: over a store that keeps no metadata, a write
// with metadata is refused plainly on every path, not stored without it.
func TestMetadataUnsupported(t *testing.T) {
	a := newAPI(t, nil)
	b := newAPI(t, plainStore{a.mem})
	body, ct := multipartBody("v", map[string]string{"metadata": `{"a":1}`})
	wantError(t, "multipart", b.do("PUT", nsPath("values/k"), body, "Content-Type", ct), http.StatusBadRequest, kvapi.CodeMetadata)
	wantError(t, "bulk", b.do("PUT", nsPath("bulk"), []byte(`[{"key":"j","value":"v"},{"key":"k","value":"v","metadata":{"a":1}}]`)), http.StatusBadRequest, kvapi.CodeMetadata)
	if n := a.mem.Len(); n != 0 {
		t.Fatalf("%d keys stored, want none", n)
	}
	body, ct = multipartBody("v", nil)
	wantOK(t, "multipart without metadata", b.do("PUT", nsPath("values/k"), body, "Content-Type", ct))
	if string(b.do("GET", nsPath("metadata/k"), nil).env.Result) != "null" {
		t.Fatal("metadata of a store without it must read null")
	}
}
