package kvapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// ownedAPI is a server that owns its namespaces, as the emulator does.
func ownedAPI(t *testing.T) *api {
	t.Helper()
	srv, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{})},
		NewStore:   func() kv.Store { return memory.New(memory.Config{}) },
		AccountID:  account,
		Token:      token,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &api{t: t, server: srv, url: hs.URL}
}

// TestNamespaces: what wrangler's "kv namespace" commands call, through the
// real client: list, create, get, rename, delete.
func TestNamespaces(t *testing.T) {
	a := ownedAPI(t)
	ctx := t.Context()
	c := a.client()
	var list cf.NamespaceListParams
	list.AccountID.Value, list.AccountID.Present = account, true
	titles := func() []string {
		t.Helper()
		page, err := c.List(ctx, list)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range page.Result {
			if !n.SupportsURLEncoding {
				t.Fatalf("namespace %+v does not say it URL-decodes keys", n)
			}
			out = append(out, n.Title)
		}
		return out
	}
	if got := titles(); !slices.Equal(got, []string{namespace}) {
		t.Fatalf("namespaces %q", got)
	}
	var create cf.NamespaceNewParams
	create.AccountID, create.Title.Value, create.Title.Present = list.AccountID, "bot-kv", true
	made, err := c.New(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if len(made.ID) != 32 || made.Title != "bot-kv" {
		t.Fatalf("created %+v", made)
	}
	var apiErr *cf.Error
	if _, err := c.New(ctx, create); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "10014") {
		t.Fatalf("creating a second bot-kv = %v, want 400 code 10014", err)
	}
	// The new namespace serves values at once.
	wantOK(t, "PUT in the new namespace", a.do("PUT", "/client/v4/accounts/"+account+"/storage/kv/namespaces/"+made.ID+"/values/k", []byte("v")))

	var get cf.NamespaceGetParams
	get.AccountID = list.AccountID
	if got, err := c.Get(ctx, made.ID, get); err != nil || got.Title != "bot-kv" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	var rename cf.NamespaceUpdateParams
	rename.AccountID, rename.Title.Value, rename.Title.Present = list.AccountID, "bot-kv-2", true
	if got, err := c.Update(ctx, made.ID, rename); err != nil || got.Title != "bot-kv-2" {
		t.Fatalf("Update = %+v, %v", got, err)
	}
	rename.Title.Value = namespace
	if _, err := c.Update(ctx, made.ID, rename); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("renaming to a taken title = %v, want 400", err)
	}
	if got := titles(); !slices.Equal(got, []string{"bot-kv-2", namespace}) && !slices.Equal(got, []string{namespace, "bot-kv-2"}) {
		t.Fatalf("namespaces after rename %q", got)
	}
	var del cf.NamespaceDeleteParams
	del.AccountID = list.AccountID
	if _, err := c.Delete(ctx, made.ID, del); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, made.ID, get); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("Get after Delete = %v, want 404", err)
	}
	if got := titles(); !slices.Equal(got, []string{namespace}) {
		t.Fatalf("namespaces after delete %q", got)
	}

	root := "/client/v4/accounts/" + account + "/storage/kv/namespaces"
	wantError(t, "no title", a.do("POST", root, []byte(`{}`)), http.StatusBadRequest, kvapi.CodeMissingTitle)
	wantError(t, "trailing data", a.do("POST", root, []byte(`{"title":"x"} {}`)), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "bad page", a.do("GET", root+"?per_page=0", nil), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	r := a.do("GET", root+"?per_page=1&page=2", nil)
	if wantOK(t, "page 2", r); string(r.env.Result) != "[]" {
		t.Fatalf("page 2 of 1 = %s", r.env.Result)
	}
}

// TestFixedNamespaces: a server that does not own its namespaces (the
// proxy) lists them but refuses to create, rename or delete them.
func TestFixedNamespaces(t *testing.T) {
	a := newAPI(t, nil)
	root := "/client/v4/accounts/" + account + "/storage/kv/namespaces"
	wantOK(t, "list", a.do("GET", root, nil))
	wantOK(t, "get", a.do("GET", root+"/"+namespace, nil))
	for _, c := range []struct{ method, path, allow string }{
		{"POST", root, "GET, HEAD"}, {"PUT", root + "/" + namespace, "GET, HEAD"}, {"DELETE", root + "/" + namespace, "GET, HEAD"},
	} {
		r := a.do(c.method, c.path, []byte(`{"title":"x"}`))
		wantError(t, c.method, r, http.StatusMethodNotAllowed, kvapi.CodeMethod)
		if r.header.Get("Allow") != c.allow {
			t.Fatalf("%s: Allow %q", c.method, r.header.Get("Allow"))
		}
	}
	wantError(t, "missing namespace", a.do("GET", root+"/nope", nil), http.StatusNotFound, kvapi.CodeNoNamespace)
}

// TestAccountCalls: the calls wrangler makes before any namespace: the
// token check and the memberships that name the account.
func TestAccountCalls(t *testing.T) {
	a := newAPI(t, nil)
	r := a.do("GET", "/client/v4/user/tokens/verify", nil)
	if wantOK(t, "verify", r); !strings.Contains(string(r.env.Result), `"status":"active"`) {
		t.Fatalf("verify result %s", r.env.Result)
	}
	wantError(t, "verify a wrong token", a.do("GET", "/client/v4/user/tokens/verify", nil, "Authorization", "Bearer nope"), http.StatusForbidden, kvapi.CodeAuthentication)
	r = a.do("GET", "/client/v4/memberships", nil)
	if wantOK(t, "memberships", r); !strings.Contains(string(r.env.Result), `"account":{"id":"`+account+`"`) {
		t.Fatalf("memberships result %s", r.env.Result)
	}
	r = a.do("GET", "/client/v4/accounts", nil)
	if wantOK(t, "accounts", r); !strings.Contains(string(r.env.Result), `"id":"`+account+`"`) {
		t.Fatalf("accounts result %s", r.env.Result)
	}
	// No user stands behind the token: wrangler whoami goes on without one.
	wantError(t, "user", a.do("GET", "/client/v4/user", nil), http.StatusForbidden, kvapi.CodeNoUserAccess)
	// A server for any account names the one its emulator prints.
	open, _ := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}})
	rec := httptest.NewRecorder()
	open.ServeHTTP(rec, httptest.NewRequest("GET", "/client/v4/memberships", nil))
	if !strings.Contains(rec.Body.String(), `"id":"`+kvapi.AnyAccount+`"`) {
		t.Fatalf("memberships of an open server: %s", rec.Body.String())
	}
}

// TestNamespaceCap: a server that owns its namespaces holds at most
// MaxNamespaces, as a Workers KV account does.
func TestNamespaceCap(t *testing.T) {
	a := ownedAPI(t)
	root := "/client/v4/accounts/" + account + "/storage/kv/namespaces"
	for i := 1; i < kvapi.MaxNamespaces; i++ {
		wantOK(t, "create", a.do("POST", root, []byte(fmt.Sprintf(`{"title":"ns-%d"}`, i))))
	}
	wantError(t, "one too many", a.do("POST", root, []byte(`{"title":"last"}`)), http.StatusBadRequest, kvapi.CodeTooManyNamespaces)
}
