package h1_test

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// TestStaleConnectionIsRetriedOnce has the server close the idle
// connection the transport pooled, as servers do after their idle
// timeout, and sends the next request on it.
func TestStaleConnectionIsRetriedOnce(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		var requests atomic.Int64
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			b, _ := io.ReadAll(r.Body)
			_, _ = io.WriteString(w, r.Method+" "+string(b))
		})
		tr := s.transport(t, h1.Config{})
		// staleNext pools a connection and has the server close it.
		staleNext := func() {
			t.Helper()
			get(t, tr, s.URL)
			_, _, closedBefore := s.counts()
			s.Config.SetKeepAlivesEnabled(false) // closes the idle connections
			waitFor(t, "the server closed the idle connection", func() bool { _, _, c := s.counts(); return c > closedBefore })
			s.Config.SetKeepAlivesEnabled(true)
		}

		cases := []struct {
			name string
			req  func() *http.Request
			want string
		}{
			{"GET", func() *http.Request { r, _ := http.NewRequest("GET", s.URL, nil); return r }, "GET "},
			{"PUT with GetBody", func() *http.Request { r, _ := http.NewRequest("PUT", s.URL, strings.NewReader("v")); return r }, "PUT v"},
			{"POST with NoBody", func() *http.Request { r, _ := http.NewRequest("POST", s.URL, http.NoBody); return r }, "POST "},
		}
		for _, c := range cases {
			staleNext()
			resp, err := tr.RoundTrip(c.req())
			if err != nil {
				t.Fatalf("%s on a stale connection: %v, want it retried on a fresh one", c.name, err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(b) != c.want {
				t.Errorf("%s: answer %q, want %q", c.name, b, c.want)
			}
		}

		// A body that cannot be sent again is not: the error is returned,
		// and the server saw no request.
		staleNext()
		before := requests.Load()
		req, _ := http.NewRequest("PUT", s.URL, io.NopCloser(strings.NewReader("once")))
		req.ContentLength = 4
		if _, err := tr.RoundTrip(req); err == nil {
			t.Error("a request whose body cannot be replayed succeeded on a stale connection")
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("the server saw %d requests, want 0", n)
		}
	})
}

// TestFreshConnectionIsNotRetried: a server that closes a new connection
// without answering fails the request; it is not sent twice.
func TestFreshConnectionIsNotRetried(t *testing.T) {
	var requests atomic.Int64
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		c, _, _ := w.(http.Hijacker).Hijack()
		_ = c.Close()
	})
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	if _, err := s.transport(t, h1.Config{}).RoundTrip(req); err == nil {
		t.Fatal("no error from a server that hung up")
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestRetryIsOnce: a server that hangs up on every request after the
// first costs a stale connection one retry, not more.
func TestRetryIsOnce(t *testing.T) {
	var requests atomic.Int64
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			return
		}
		c, _, _ := w.(http.Hijacker).Hijack()
		_ = c.Close()
	})
	tr := s.transport(t, h1.Config{})
	get(t, tr, s.URL)
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("no error from a server that hangs up")
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("server saw %d requests, want 3 (one, then one retry of the second)", n)
	}
}
