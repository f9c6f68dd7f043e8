package service

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// TestTokenCharacterSets holds both ends together: every client token the
// service accepts at start is one the front accepts in a request, and the
// tokens the front could never match (white space inside, "#", non-ASCII,
// quotes, "=" before the end) are refused at start with a usage error.
func TestTokenCharacterSets(t *testing.T) {
	accepted := 0
	for _, tok := range []string{
		"client-SECRET", "Abc_123-xyz.~+/", "padded==", "0123456789abcdefABCDEF0123456789abcdefAB",
		"a#b", "tökén", "a b", "a\tb", `a"b`, "a=b", "a,b", "a;b", "=", "a\\b", "a%20b", "\u00a0x",
	} {
		c, err := Parse(nil, env(with(map[string]string{EnvToken: tok})))
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Errorf("%q: refused with %v, want a usage error", tok, err)
			}
			continue
		}
		accepted++
		tok := c.secrets.token // as read: trimmed
		front, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}, Token: tok})
		if err != nil {
			t.Errorf("%q: the service accepts it, the front does not: %v", tok, err)
			continue
		}
		req := httptest.NewRequest(http.MethodGet, "/client/v4/accounts/acc/storage/kv/namespaces/ns/keys", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		front.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("%q: the service accepts it at start, the front answers %d to it", tok, rec.Code)
		}
	}
	if accepted != 5 {
		t.Errorf("%d tokens accepted, want the 4 well-formed ones and the one white space trims to one", accepted)
	}
	// The admin token follows the same rule.
	if _, err := Parse(nil, env(with(map[string]string{EnvAdminToken: "admin#1"}))); !errors.Is(err, ErrUsage) {
		t.Errorf("an admin token with # = %v, want a usage error", err)
	}
}
