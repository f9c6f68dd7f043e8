package kvapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// FuzzServer sends arbitrary requests: the server never panics, never
// answers a status outside the API's, and answers every refusal with an
// envelope.
func FuzzServer(f *testing.F) {
	for _, c := range []struct{ method, path, body string }{
		{"GET", nsPath("values/k"), ""},
		{"PUT", nsPath("values/a%2F..%2Fb?expiration_ttl=60"), "v"},
		{"GET", nsPath("keys?limit=10&prefix=a&cursor=bmsx"), ""},
		{"PUT", nsPath("bulk"), `[{"key":"k","value":"dg==","base64":true,"expiration":1e12}]`},
		{"POST", nsPath("bulk/get"), `{"keys":["k"],"type":"json","withMetadata":true}`},
		{"POST", nsPath("bulk/delete"), `["k"]`},
		{"DELETE", nsPath("values/%FF"), ""},
	} {
		f.Add(c.method, c.path, []byte(c.body))
	}
	clk := clock.NewFake(start)
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: mem}, AccountID: account, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	statuses := map[int]bool{200: true, 400: true, 403: true, 404: true, 405: true, 413: true, 414: true, 429: true, 500: true, 503: true}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		u, err := url.ParseRequestURI(path)
		if err != nil || !validMethod(method) {
			return // net/http refuses these before any handler
		}
		req := &http.Request{Method: method, URL: u, Header: http.Header{}, Body: httpBody(body), Host: "x"}
		req = req.WithContext(t.Context())
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if !statuses[rec.Code] {
			t.Fatalf("%s %s: status %d", method, path, rec.Code)
		}
		isValue := method == "GET" && rec.Code == 200 && rec.Header().Get("Content-Type") == "application/octet-stream"
		if isValue {
			return
		}
		var env struct {
			Success *bool             `json:"success"`
			Errors  []json.RawMessage `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Success == nil || env.Errors == nil {
			t.Fatalf("%s %s: %d with body %q, want an envelope", method, path, rec.Code, rec.Body.Bytes())
		}
		if *env.Success != (rec.Code == 200) || (!*env.Success && len(env.Errors) == 0) {
			t.Fatalf("%s %s: %d with envelope %s", method, path, rec.Code, rec.Body.Bytes())
		}
	})
}

func validMethod(m string) bool {
	return m != "" && !strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f })
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func httpBody(b []byte) readCloser { return readCloser{bytes.NewReader(b)} }
