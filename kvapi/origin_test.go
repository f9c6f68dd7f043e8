package kvapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kvshadow/kvshadow/kvapi"
)

func TestCheckLocal(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}
	for _, c := range []struct {
		host          string
		origin, fetch string
		ok            bool
	}{
		{"127.0.0.1:8787", "", "", true},
		{"localhost:8787", "", "", true},
		{"LocalHost", "", "", true},
		{"[::1]:8787", "", "", true},
		{"127.1.2.3", "", "", true},
		{"127.0.0.1:8787", "http://127.0.0.1:8787", "same-origin", true},
		{"127.0.0.1:8787", "http://localhost:8787", "", true},
		{"127.0.0.1:8787", "", "none", true}, // typed in the address bar
		{"evil.example:8787", "", "", false},
		{"127.0.0.1.evil.example:8787", "", "", false},
		{"10.0.0.1:8787", "", "", false},
		{"", "", "", false},
		{"127.0.0.1:8787", "https://evil.example", "", false},
		{"127.0.0.1:8787", "null", "", false},
		{"127.0.0.1:8787", "http://127.0.0.1:9999", "", false}, // another local service's page
		{"127.0.0.1:8787", "http://127.0.0.1", "", false},
		{"127.0.0.1:8787", "file://", "", false},
		{"127.0.0.1:8787", "", "cross-site", false},
		{"127.0.0.1:8787", "", "same-site", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.fetch != "" {
			r.Header.Set("Sec-Fetch-Site", c.fetch)
		}
		err := kvapi.CheckLocal(r)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, kvapi.ErrForeignRequest)) {
			t.Errorf("Host %q Origin %q Sec-Fetch-Site %q: %v, want ok %v", c.host, c.origin, c.fetch, err, c.ok)
		}
	}
}
