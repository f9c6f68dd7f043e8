package kvapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// FuzzServer sends arbitrary requests: the server never panics, never
// answers a status outside the API's, and answers every refusal with an
// envelope. A front for clients (RefuseReserved) given the same request
// leaves the keys under kv.ReservedPrefix of its store as they were.
func FuzzServer(f *testing.F) {
	for _, c := range []struct{ method, path, body string }{
		{"GET", nsPath("values/k"), ""},
		{"PUT", nsPath("values/a%2F..%2Fb?expiration_ttl=60"), "v"},
		{"GET", nsPath("keys?limit=10&prefix=a&cursor=bmsx"), ""},
		{"PUT", nsPath("bulk"), `[{"key":"k","value":"dg==","base64":true,"expiration":1e12}]`},
		{"POST", nsPath("bulk/get"), `{"keys":["k"],"type":"json","withMetadata":true}`},
		{"POST", nsPath("bulk/delete"), `["k"]`},
		{"DELETE", nsPath("values/%FF"), ""},
		{"HEAD", nsPath("values/k"), ""},
		{"POST", "/client/v4/accounts/" + account + "/storage/kv/namespaces", `{"title":"t"}`},
		{"PUT", "/client/v4/accounts/" + account + "/storage/kv/namespaces/" + namespace, `{"title":"u"}`},
		{"GET", "/client/v4/accounts/" + account + "/storage/kv/namespaces?page=2&per_page=5&order=title", ""},
		{"GET", "/client/v4/memberships", ""},
		{"PUT", nsPath("values/%5f%5Fkvshadow%3Astage"), "off"},
		{"POST", nsPath("bulk/delete"), `["\u005f_kvshadow:stage"]`},
		{"GET", nsPath("keys?prefix=__kvshadow%3a"), ""},
	} {
		f.Add(c.method, c.path, []byte(c.body))
	}
	clk := clock.NewFake(start)
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{namespace: mem},
		NewStore:   func() kv.Store { return memory.New(memory.Config{Clock: clk}) },
		AccountID:  account,
		Clock:      clk,
	})
	if err != nil {
		f.Fatal(err)
	}
	guarded := memory.New(memory.Config{Clock: clk})
	const stageKey = kv.ReservedPrefix + "stage"
	if err := guarded.Put(f.Context(), stageKey, []byte("handover"), kv.PutOptions{}); err != nil {
		f.Fatal(err)
	}
	front, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: guarded}, AccountID: account, Clock: clk, RefuseReserved: true})
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
		front.ServeHTTP(httptest.NewRecorder(), req.Clone(t.Context()))
		if v, err := guarded.Get(t.Context(), stageKey); err != nil || string(v) != "handover" {
			t.Fatalf("%s %s through the front: the stage key is %q, %v", method, path, v, err)
		}
		if res, err := guarded.List(t.Context(), kv.ListOptions{Prefix: kv.ReservedPrefix}); err != nil || len(res.Keys) != 1 {
			t.Fatalf("%s %s through the front: reserved keys %q, %v", method, path, res.Keys, err)
		}
		req.Body = httpBody(body)
		srv.ServeHTTP(rec, req)
		if !statuses[rec.Code] {
			t.Fatalf("%s %s: status %d", method, path, rec.Code)
		}
		isValue := (method == "GET" || method == "HEAD") && rec.Code == 200 && rec.Header().Get("Content-Type") == "application/octet-stream"
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

// FuzzRawRequest sends arbitrary bytes to a hardened front over TCP: the
// first answer, if any, is a value or Cloudflare's envelope, never net/http's
// plain text, and always a status the API uses.
func FuzzRawRequest(f *testing.F) {
	for _, seed := range []string{
		"GET " + nsPath("keys") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET " + nsPath("values/%zz") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET " + nsPath("values/a\x00") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"PUT " + nsPath("values/k") + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n\r\nv",
		"PUT " + nsPath("bulk") + " HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[{}]x\r\n0\r\n\r\n",
		"POST " + nsPath("bulk/get") + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 14\r\n\r\n{\"keys\":[\"k\"]}",
		"HEAD " + nsPath("values/k") + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET / HTTP/9.9\r\n\r\n",
		"\x16\x03\x01\x00",
	} {
		f.Add([]byte(seed))
	}
	clk := clock.NewFake(start)
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{Clock: clk})}, AccountID: account, Clock: clk})
	if err != nil {
		f.Fatal(err)
	}
	hs, err := kvapi.NewHTTPServer(srv, kvapi.ServeConfig{Unauthenticated: true, ReadHeaderTimeout: time.Second, ReadTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	f.Cleanup(func() { _ = hs.Close() })
	statuses := map[int]bool{200: true, 400: true, 403: true, 404: true, 405: true, 413: true, 414: true, 417: true, 431: true, 501: true, 503: true, 505: true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(raw); err != nil {
			return // the server hung up early: nothing was answered
		}
		_ = c.(*net.TCPConn).CloseWrite()
		out, _ := io.ReadAll(c)
		if len(out) == 0 {
			return // an incomplete request is not answered
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out)), nil)
		if err != nil {
			t.Fatalf("answer is not HTTP: %q", out)
		}
		ct := resp.Header.Get("Content-Type")
		if !statuses[resp.StatusCode] || (ct != "application/json" && !(resp.StatusCode == 200 && ct == "application/octet-stream")) {
			t.Fatalf("answer %d %q: %q", resp.StatusCode, ct, out)
		}
	})
}
