package kvapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// The emulator serves kvshadow's own keys as Workers KV does (the proxy
// writes its stage key through it); a front for clients over the same store
// refuses them, and a listing by a prefix under them, with 400 10042.
func TestRefuseReservedIsTheFrontsAlone(t *testing.T) {
	emulator := newAPI(t, nil)
	const stage = kv.ReservedPrefix + "stage"
	wantOK(t, "the emulator's PUT", emulator.do("PUT", nsPath("values/"+stage), []byte("handover")))
	if r := emulator.do("GET", nsPath("values/%5F%5Fkvshadow%3Astage"), nil); r.status != 200 || string(r.body) != "handover" {
		t.Fatalf("the emulator's GET = %d %q", r.status, r.body)
	}
	wantOK(t, "the emulator's PUT", emulator.do("PUT", nsPath("values/wordle:a"), []byte("a")))
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: emulator.mem}, AccountID: account, Token: token, Clock: emulator.clk, RefuseReserved: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	front := &api{t: t, clk: emulator.clk, mem: emulator.mem, server: srv, url: hs.URL}
	r := front.do("GET", nsPath("values/%5F%5Fkvshadow%3Astage"), nil)
	wantError(t, "the front's GET", r, http.StatusBadRequest, kvapi.CodeIllegalKey)
	if !strings.Contains(r.message, `"__kvshadow:"`) {
		t.Fatalf("the refusal says %q", r.message)
	}
	wantError(t, "the front's listing under the prefix", front.do("GET", nsPath("keys?prefix=__kvshadow%3A"), nil), http.StatusBadRequest, kvapi.CodeIllegalKey)
	if r := emulator.do("GET", nsPath("keys?prefix=__kvshadow%3A"), nil); r.status != 200 || !strings.Contains(string(r.body), stage) {
		t.Fatalf("the emulator's listing: %d %s", r.status, r.body)
	}
}
