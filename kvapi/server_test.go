package kvapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// TestAuthentication: the refusals Cloudflare gives: no credentials 400
// code 9106; a header that is not a bearer token 400 code 6003 with 6111 in
// its error chain; a wrong token 403 code 10000. None quotes the token.
func TestAuthentication(t *testing.T) {
	a := newAPI(t, nil)
	for name, c := range map[string]struct {
		header, value string
		status, code  int
	}{
		"no header":      {"Authorization", "", http.StatusBadRequest, kvapi.CodeMissingAuth},
		"not bearer":     {"Authorization", token, http.StatusBadRequest, kvapi.CodeInvalidHeaders},
		"basic":          {"Authorization", "Basic " + token, http.StatusBadRequest, kvapi.CodeInvalidHeaders},
		"bearer alone":   {"Authorization", "Bearer ", http.StatusBadRequest, kvapi.CodeInvalidHeaders},
		"space in token": {"Authorization", "Bearer a b", http.StatusBadRequest, kvapi.CodeInvalidHeaders},
		"wrong token":    {"Authorization", "Bearer nope", http.StatusForbidden, kvapi.CodeAuthentication},
		"token prefix":   {"Authorization", "Bearer " + token[:5], http.StatusForbidden, kvapi.CodeAuthentication},
		"legacy api key": {"X-Auth-Key", "k", http.StatusForbidden, kvapi.CodeAuthentication},
	} {
		hdr := []string{"Authorization", ""}
		if c.header == "Authorization" {
			hdr[1] = c.value
		} else {
			hdr = append(hdr, c.header, c.value)
		}
		r := a.do("GET", nsPath("keys"), nil, hdr...)
		wantError(t, name, r, c.status, c.code)
		if strings.Contains(string(r.body), token) {
			t.Fatalf("%s: the refusal quotes the token", name)
		}
		if c.code == kvapi.CodeInvalidHeaders && !strings.Contains(string(r.body), `"error_chain":[{"code":6111,`) {
			t.Fatalf("%s: no 6111 in the error chain: %s", name, r.body)
		}
	}
	wantOK(t, "right token", a.do("GET", nsPath("keys"), nil))

	// Without a configured token anyone is served.
	open, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}})
	if err != nil {
		t.Fatal(err)
	}
	if s := open.String(); strings.Contains(s, "auth: true") || open.RequiresToken() {
		t.Fatalf("String() = %s", s)
	}
}

func TestRouting(t *testing.T) {
	a := newAPI(t, nil)
	other := "/client/v4/accounts/" + strings.Repeat("9", 32) + "/storage/kv/namespaces/" + namespace + "/keys"
	wantError(t, "another account", a.do("GET", other, nil), http.StatusNotFound, kvapi.CodeBadAccount)
	missingNS := "/client/v4/accounts/" + account + "/storage/kv/namespaces/" + strings.Repeat("0", 32) + "/values/k"
	wantError(t, "missing namespace", a.do("GET", missingNS, nil), http.StatusNotFound, kvapi.CodeNoNamespace)
	badNS := "/client/v4/accounts/" + account + "/storage/kv/namespaces/a.b/keys"
	wantError(t, "malformed namespace", a.do("GET", badNS, nil), http.StatusBadRequest, kvapi.CodeNamespaceID)
	for _, path := range []string{"/", "/client/v4/", "/client/v4/accounts/" + account, nsPath("nothing"), nsPath("bulk/nothing"), "/client/v4/accounts/" + account + "/workers/scripts", "/client/v4/accounts/" + account + "/storage/kv/namespacesX"} {
		wantError(t, path, a.do("GET", path, nil), http.StatusNotFound, kvapi.CodeNoRoute)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"POST", nsPath("values/k"), "DELETE, GET, HEAD, PUT"}, {"PATCH", nsPath("values/k"), "DELETE, GET, HEAD, PUT"},
		{"PUT", nsPath("keys"), "GET, HEAD"}, {"GET", nsPath("bulk"), "DELETE, PUT"}, {"GET", nsPath("bulk/get"), "POST"},
		{"PUT", nsPath("metadata/k"), "GET, HEAD"}, {"DELETE", strings.TrimSuffix(nsPath(""), "/"), "GET, HEAD"},
	} {
		r := a.do(c.method, c.path, nil)
		wantError(t, c.method+" "+c.path, r, http.StatusMethodNotAllowed, kvapi.CodeMethod)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	if n := a.server.Requests(); n != 17 {
		t.Fatalf("Requests() = %d, want the 17 sent", n)
	}
}

func TestNewValidates(t *testing.T) {
	mem := memory.New(memory.Config{})
	for name, cfg := range map[string]kvapi.Config{
		"no namespaces":     {},
		"nil store":         {Namespaces: map[string]kv.Store{"ns": nil}},
		"bad namespace ID":  {Namespaces: map[string]kv.Store{"a/b": mem}},
		"bad account ID":    {Namespaces: map[string]kv.Store{"ns": mem}, AccountID: "a b"},
		"empty namespaceID": {Namespaces: map[string]kv.Store{"": mem}},
	} {
		if _, err := kvapi.New(cfg); !errors.Is(err, kvapi.ErrConfig) {
			t.Errorf("New(%s) = %v, want ErrConfig", name, err)
		}
	}
}

// failingStore fails every call with err.
type failingStore struct{ err error }

func (f failingStore) Get(_ context.Context, _ string) ([]byte, error)                  { return nil, f.err }
func (f failingStore) Put(_ context.Context, _ string, _ []byte, _ kv.PutOptions) error { return f.err }
func (f failingStore) Delete(_ context.Context, _ string) error                         { return f.err }
func (f failingStore) List(_ context.Context, _ kv.ListOptions) (kv.ListResult, error) {
	return kv.ListResult{}, f.err
}

// TestStoreErrors: what a store reports is mapped to the API's answers; an
// unavailable store (the dual-write proxy's primary down) is a 503 with its
// Retry-After, and nothing the store says is forwarded.
func TestStoreErrors(t *testing.T) {
	down := newAPI(t, failingStore{kv.Unavailable("mongodb", 7_000_000_000, errors.New("secret://user:pw@host"))})
	r := down.do("GET", nsPath("values/k"), nil)
	wantError(t, "unavailable store", r, http.StatusServiceUnavailable, kvapi.CodeUnavailable)
	if r.header.Get("Retry-After") != "7" {
		t.Fatalf("Retry-After %q, want 7", r.header.Get("Retry-After"))
	}
	// A store that refuses the server's own credentials (a proxy whose
	// Workers KV token was revoked) is a bad gateway that says so, not an
	// internal error, and still forwards nothing of the store's.
	denied := newAPI(t, failingStore{fmt.Errorf("secret://user:pw@host: %w", kv.ErrAccessDenied)})
	for _, method := range []string{"GET", "PUT"} {
		r := denied.do(method, nsPath("values/k"), nil)
		wantError(t, "access denied "+method, r, http.StatusBadGateway, kvapi.CodeUnavailable)
		if !strings.Contains(string(r.body), "refuses its credentials") || strings.Contains(string(r.body), "secret") {
			t.Fatalf("access denied %s: %s", method, r.body)
		}
	}
	broken := newAPI(t, failingStore{errors.New("secret://user:pw@host")})
	for _, c := range []struct{ method, path string }{{"GET", nsPath("values/k")}, {"PUT", nsPath("values/k")}, {"DELETE", nsPath("values/k")}, {"GET", nsPath("keys")}} {
		r := broken.do(c.method, c.path, nil)
		wantError(t, c.method+" "+c.path, r, http.StatusInternalServerError, kvapi.CodeUnavailable)
		if strings.Contains(string(r.body), "secret") {
			t.Fatalf("the store's error reached the client: %s", r.body)
		}
	}
}
