package kvapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

const (
	account   = "0123456789abcdef0123456789abcdef"
	namespace = "fedcba9876543210fedcba9876543210"
	token     = "server-test-token"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// api is a kvapi server over memory on a loopback HTTP server, driven with
// raw HTTP requests.
type api struct {
	t      *testing.T
	clk    *clock.Fake
	mem    *memory.Store
	server *kvapi.Server
	url    string
}

func newAPI(t *testing.T, store kv.Store) *api {
	t.Helper()
	clk := clock.NewFake(start)
	mem := memory.New(memory.Config{Clock: clk})
	if store == nil {
		store = mem
	}
	srv, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{namespace: store},
		AccountID:  account,
		Token:      token,
		Clock:      clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &api{t: t, clk: clk, mem: mem, server: srv, url: hs.URL}
}

// nsPath is the path of the test namespace; rel is appended as it is,
// already escaped.
func nsPath(rel string) string {
	return "/client/v4/accounts/" + account + "/storage/kv/namespaces/" + namespace + "/" + rel
}

// response is an answer, with its envelope when it has one.
type response struct {
	status int
	header http.Header
	body   []byte
	env    struct {
		Success    *bool             `json:"success"`
		Errors     []json.RawMessage `json:"errors"`
		Messages   []json.RawMessage `json:"messages"`
		Result     json.RawMessage   `json:"result"`
		ResultInfo *struct {
			Count  int    `json:"count"`
			Cursor string `json:"cursor"`
		} `json:"result_info"`
	}
	code    int
	message string
}

// do sends a request with the test token; path is sent exactly as given.
func (a *api) do(method, path string, body []byte, header ...string) response {
	a.t.Helper()
	return a.send(method, path, bytes.NewReader(body), header...)
}

// stream sends body without a declared length (chunked).
func (a *api) stream(method, path string, body io.Reader, header ...string) response {
	a.t.Helper()
	return a.send(method, path, io.MultiReader(body), header...)
}

// send sends a request with the test token; net/http declares the body's
// length when it can tell it.
func (a *api) send(method, path string, body io.Reader, header ...string) response {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), method, a.url+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: raw}
	if method != "HEAD" && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.env); err != nil {
			a.t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
		}
		checkEnvelope(a.t, method+" "+path, r)
		if len(r.env.Errors) > 0 {
			var m struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(r.env.Errors[0], &m)
			r.code, r.message = m.Code, m.Message
		}
	}
	return r
}

// checkEnvelope checks Cloudflare's envelope shape: success, errors and
// messages always present, an error on failure and none on success.
func checkEnvelope(t *testing.T, what string, r response) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &fields); err != nil {
		t.Fatalf("%s: envelope is not an object: %s", what, r.body)
	}
	for _, f := range []string{"success", "errors", "messages", "result"} {
		if _, ok := fields[f]; !ok {
			t.Fatalf("%s: envelope lacks %q: %s", what, f, r.body)
		}
	}
	if r.env.Errors == nil || r.env.Messages == nil || r.env.Success == nil {
		t.Fatalf("%s: errors and messages must be arrays: %s", what, r.body)
	}
	ok := r.status >= 200 && r.status < 300
	if *r.env.Success && (!ok || len(r.env.Errors) != 0) || !*r.env.Success && len(r.env.Errors) == 0 {
		t.Fatalf("%s: HTTP %d with envelope %s", what, r.status, r.body)
	}
}

// wantError checks a refusal's status and code.
func wantError(t *testing.T, what string, r response, status, code int) {
	t.Helper()
	if r.status != status || r.code != code || *r.env.Success {
		t.Fatalf("%s = HTTP %d code %d (%s); want HTTP %d code %d", what, r.status, r.code, r.body, status, code)
	}
}

func wantOK(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s = HTTP %d: %s", what, r.status, r.body)
	}
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
