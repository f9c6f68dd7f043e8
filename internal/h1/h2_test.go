package h1_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// newH2Server is a TLS server that prefers HTTP/2 by ALPN.
func newH2Server(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}
