package h1_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// server is an httptest server, plain or TLS, that counts the connections
// it accepted and those still open.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	accepted int
	open     int
	closed   int
}

func newServer(t testing.TB, useTLS bool, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch st {
		case http.StateNew:
			s.accepted++
			s.open++
		case http.StateClosed, http.StateHijacked:
			s.open--
			s.closed++
		}
	}
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *server) counts() (accepted, open, closed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, s.open, s.closed
}

// transport returns an h1.Transport for s, trusting its certificate.
func (s *server) transport(t testing.TB, cfg h1.Config) *h1.Transport {
	t.Helper()
	if s.TLS != nil && cfg.TLS == nil {
		cfg.TLS = s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	tr := h1.New(cfg)
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// waitFor polls cond until it holds; a condition that never holds fails
// the test after a generous while rather than hanging it.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// both runs f over plain HTTP and over TLS.
func both(t *testing.T, f func(t *testing.T, useTLS bool)) {
	t.Run("http", func(t *testing.T) { f(t, false) })
	t.Run("tls", func(t *testing.T) { f(t, true) })
}

// get sends a GET for path with tr and returns the body read to EOF.
func get(t testing.TB, tr http.RoundTripper, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	_ = resp.Body.Close()
	return resp, string(b)
}

// tlsOf is the TLS state of an answer, failing the test without one.
func tlsOf(t testing.TB, resp *http.Response) *tls.ConnectionState {
	t.Helper()
	if resp.TLS == nil {
		t.Fatal("answer over TLS has no TLS state")
	}
	return resp.TLS
}

// answerOK answers every request "ok".
func answerOK(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// closeIdle closes c's idle connections and waits until s has seen them
// all closed.
func closeIdle(t testing.TB, s *server, c interface{ CloseIdleConnections() }) {
	t.Helper()
	c.CloseIdleConnections()
	waitFor(t, "the idle connections closed", func() bool { _, open, _ := s.counts(); return open == 0 })
}
