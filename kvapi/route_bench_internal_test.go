package kvapi

import (
	"net/http/httptest"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// BenchmarkAuthorizeAndRoute prices what the front checks of every request
// before its handler runs: the token and the route, with its account and
// namespace IDs, of a value GET.
func BenchmarkAuthorizeAndRoute(b *testing.B) {
	ns := "0123456789abcdef0123456789abcdef"
	s, err := New(Config{AccountID: "acc", Namespaces: map[string]kv.Store{ns: memory.New(memory.Config{})}, Token: "0123456789abcdefghij0123456789ABCDEFGHIJ"})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/client/v4/accounts/acc/storage/kv/namespaces/"+ns+"/values/wordle%3Agames%3A42", nil)
	r.Header.Set("Authorization", "Bearer 0123456789abcdefghij0123456789ABCDEFGHIJ")
	b.ReportAllocs()
	for b.Loop() {
		if e := s.authorize(r); e != nil {
			b.Fatal(e)
		}
		if _, e := s.route(r); e != nil {
			b.Fatal(e)
		}
	}
}
