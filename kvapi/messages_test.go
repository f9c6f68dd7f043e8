package kvapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kvapi"
)

// The refusals whose texts Workers KV publishes carry its own words: wrangler
// and the Workers runtime print them to their users as they come.
func TestCloudflareErrorTexts(t *testing.T) {
	a := newAPI(t, nil)
	now := start.Unix()
	long := strings.Repeat("k", 513)
	for _, c := range []struct {
		method, path string
		status, code int
		message      string
	}{
		{"PUT", nsPath("values/a?expiration_ttl=30"), http.StatusBadRequest, kvapi.CodeExpirationTTL,
			"Invalid expiration_ttl of 30. Expiration TTL must be at least 60."},
		{"PUT", nsPath("values/a?expiration_ttl=0"), http.StatusBadRequest, kvapi.CodeExpirationTTL,
			"Invalid expiration_ttl of 0. Please specify integer greater than 0."},
		{"PUT", nsPath("values/a?expiration_ttl=soon"), http.StatusBadRequest, kvapi.CodeExpirationTTL,
			"Invalid expiration_ttl of soon. Please specify integer greater than 0."},
		{"PUT", nsPath(fmt.Sprintf("values/a?expiration=%d", now)), http.StatusBadRequest, kvapi.CodeExpiration,
			fmt.Sprintf("Invalid expiration of %d. Please specify integer greater than the current number of seconds since the UNIX epoch.", now)},
		{"PUT", nsPath(fmt.Sprintf("values/a?expiration=%d", now+30)), http.StatusBadRequest, kvapi.CodeExpiration,
			fmt.Sprintf("Invalid expiration of %d. Expiration times must be at least 60 seconds in the future.", now+30)},
		{"GET", nsPath("keys?limit=1001"), http.StatusBadRequest, kvapi.CodeInvalidLimit,
			"Invalid key_count_limit of 1001. Please specify an integer less than 1000."},
		{"GET", nsPath("keys?limit=many"), http.StatusBadRequest, kvapi.CodeInvalidLimit,
			"Invalid key_count_limit of many. Please specify an integer greater than 0."},
		{"PUT", nsPath("values/" + long), http.StatusRequestURITooLong, kvapi.CodeKeyTooLong,
			"UTF-8 encoded length of 513 exceeds key length limit of 512."},
		{"GET", nsPath("keys?prefix=" + long), http.StatusRequestURITooLong, kvapi.CodeKeyTooLong,
			"UTF-8 encoded length of 513 exceeds key length limit of 512."},
		{"PUT", nsPath("values/.."), http.StatusBadRequest, kvapi.CodeIllegalKey,
			`Illegal key name "..". Please use a different name.`},
		{"PUT", nsPath("values/a?expiration_ttl=" + strings.Repeat("9x", 40)), http.StatusBadRequest, kvapi.CodeExpirationTTL,
			"Invalid expiration_ttl of " + strings.Repeat("9x", 16) + ".... Please specify integer greater than 0."},
	} {
		r := a.do(c.method, c.path, []byte("v"))
		if r.status != c.status || r.code != c.code || r.message != c.message {
			t.Errorf("%s %.80s = HTTP %d code %d %q\nwant HTTP %d code %d %q", c.method, c.path, r.status, r.code, r.message, c.status, c.code, c.message)
		}
	}
}

// A server over fixed namespaces (the proxy) answers a namespace's creation,
// renaming or deletion in Cloudflare's envelope, saying where the set is
// changed; other methods it does not serve keep the generic answer.
func TestFixedNamespacesSayWhereToChangeThem(t *testing.T) {
	a := newAPI(t, nil)
	for _, c := range []struct{ method, path string }{
		{"POST", "/client/v4/accounts/" + account + "/storage/kv/namespaces"},
		{"PUT", nsPath("")},
		{"DELETE", nsPath("")},
	} {
		r := a.do(c.method, strings.TrimSuffix(c.path, "/"), []byte(`{"title":"new"}`))
		wantError(t, c.method+" "+c.path, r, http.StatusMethodNotAllowed, kvapi.CodeMethod)
		if want := "This server serves a fixed set of namespaces (" + namespace + "); it does not create, rename or delete them."; r.message != want {
			t.Errorf("%s %s: message %q, want %q", c.method, c.path, r.message, want)
		}
	}
	r := a.do("PATCH", nsPath("values/a"), nil)
	wantError(t, "PATCH a value", r, http.StatusMethodNotAllowed, kvapi.CodeMethod)
	if r.message != "method not allowed for this route" {
		t.Errorf("PATCH a value: message %q", r.message)
	}
}
