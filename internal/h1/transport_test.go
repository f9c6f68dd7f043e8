package h1_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvshadow/kvshadow/internal/h1"
)

func TestSequentialRequestsShareOneConnection(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			_, _ = fmt.Fprint(w, r.URL.Path)
		})
		tr := s.transport(t, h1.Config{})
		for i := range 20 {
			path := fmt.Sprintf("/k%d", i)
			if _, body := get(t, tr, s.URL+path); body != path {
				t.Fatalf("body %q, want %q", body, path)
			}
		}
		if accepted, _, _ := s.counts(); accepted != 1 {
			t.Errorf("20 sequential requests opened %d connections, want 1", accepted)
		}
	})
}

func TestIdleTimeoutClosesInsteadOfReusing(t *testing.T) {
	s := newServer(t, false, answerOK)
	tr := s.transport(t, h1.Config{IdleTimeout: 1}) // 1 ns: every idle connection is too old
	for range 3 {
		get(t, tr, s.URL)
	}
	if accepted, _, _ := s.counts(); accepted != 3 {
		t.Errorf("accepted %d connections, want 3: none idle 1 ns may be reused", accepted)
	}
	waitFor(t, "the expired connections closed", func() bool { _, open, _ := s.counts(); return open <= 1 })
}

func TestMaxIdlePerHostClosesTheRest(t *testing.T) {
	s := newServer(t, false, answerOK)
	tr := s.transport(t, h1.Config{MaxIdlePerHost: 2})
	var resps []*http.Response
	for range 5 { // each answer holds its connection until its body is read
		req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, resp)
	}
	for _, resp := range resps {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	waitFor(t, "3 of 5 connections closed", func() bool { _, open, closed := s.counts(); return open == 2 && closed == 3 })
	for range 4 {
		get(t, tr, s.URL)
	}
	if accepted, _, _ := s.counts(); accepted != 5 {
		t.Errorf("accepted %d connections, want the 5 and no more", accepted)
	}
}

func TestNoIdleConnectionsWhenMaxIdleIsNegative(t *testing.T) {
	s := newServer(t, false, answerOK)
	tr := s.transport(t, h1.Config{MaxIdlePerHost: -1})
	get(t, tr, s.URL)
	get(t, tr, s.URL)
	if accepted, _, _ := s.counts(); accepted != 2 {
		t.Errorf("accepted %d connections, want 2", accepted)
	}
}

func TestCloseIdleConnections(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		s := newServer(t, useTLS, answerOK)
		tr := s.transport(t, h1.Config{})
		get(t, tr, s.URL)
		// http.Client reaches it through its interface, as cloudflare-go may.
		closeIdle(t, s, &http.Client{Transport: tr})
		get(t, tr, s.URL)
		if accepted, _, _ := s.counts(); accepted != 2 {
			t.Errorf("accepted %d connections, want 2", accepted)
		}
	})
}

func TestFraming(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/length":
				w.Header().Set("Content-Length", "5")
				_, _ = io.WriteString(w, "fixed")
			case "/chunked":
				for _, part := range []string{"chu", "nk", "ed"} {
					_, _ = io.WriteString(w, part)
					w.(http.Flusher).Flush()
				}
			case "/trailer":
				w.Header().Set("Trailer", "X-Sum")
				_, _ = io.WriteString(w, "body")
				w.(http.Flusher).Flush()
				w.Header().Set("X-Sum", "42")
			case "/close":
				w.Header().Set("Connection", "close")
				_, _ = io.WriteString(w, "bye")
			case "/head":
				w.Header().Set("Content-Length", "1000")
			case "/empty":
				w.WriteHeader(http.StatusNoContent)
			}
		})
		tr := s.transport(t, h1.Config{})
		conns := func() int { a, _, _ := s.counts(); return a }

		if resp, body := get(t, tr, s.URL+"/length"); body != "fixed" || resp.ContentLength != 5 {
			t.Errorf("Content-Length answer: %q, length %d", body, resp.ContentLength)
		}
		if resp, body := get(t, tr, s.URL+"/chunked"); body != "chunked" || resp.ContentLength != -1 {
			t.Errorf("chunked answer: %q, length %d", body, resp.ContentLength)
		}
		if resp, body := get(t, tr, s.URL+"/trailer"); body != "body" || resp.Trailer.Get("X-Sum") != "42" {
			t.Errorf("chunked answer with trailer: %q, trailer %v", body, resp.Trailer)
		}
		req, _ := http.NewRequest(http.MethodHead, s.URL+"/head", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.ContentLength != 1000 || resp.Body != http.NoBody {
			t.Fatalf("HEAD: %v, length %d, body %T", err, resp.ContentLength, resp.Body)
		}
		if resp, body := get(t, tr, s.URL+"/empty"); resp.StatusCode != http.StatusNoContent || body != "" {
			t.Errorf("204: %d %q", resp.StatusCode, body)
		}
		if n := conns(); n != 1 {
			t.Fatalf("length, chunked, trailer, HEAD and 204 took %d connections, want 1", n)
		}

		if resp, body := get(t, tr, s.URL+"/close"); body != "bye" || !resp.Close {
			t.Errorf("Connection: close answer: %q, Close %v", body, resp.Close)
		}
		putOnce(t, tr, s.URL+"/length")
		if n := conns(); n != 2 {
			t.Fatalf("after the server's Connection: close, %d connections, want 2", n)
		}

		req, _ = http.NewRequest(http.MethodGet, s.URL+"/length", nil)
		req.Close = true
		resp, err = tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		putOnce(t, tr, s.URL+"/length")
		if n := conns(); n != 3 {
			t.Fatalf("after a request with Close, %d connections, want 3", n)
		}
	})
}

func TestInformationalAnswersAreSkipped(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "final")
	})
	resp, body := get(t, s.transport(t, h1.Config{}), s.URL)
	if resp.StatusCode != http.StatusOK || body != "final" {
		t.Errorf("got %d %q, want the final 200", resp.StatusCode, body)
	}
}

func TestHeadersOverTheLimitAreAnError(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", h1.MaxHeaderBytes+1))
	})
	req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	_, err := s.transport(t, h1.Config{}).RoundTrip(req)
	if !errors.Is(err, h1.ErrProtocol) {
		t.Errorf("err = %v, want ErrProtocol", err)
	}
}

func TestEarlyCloseDrainsWhatArrivedOrCloses(t *testing.T) {
	both(t, func(t *testing.T, useTLS bool) {
		big := strings.Repeat("x", 1<<20)
		s := newServer(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/big" {
				_, _ = io.WriteString(w, big)
				return
			}
			_, _ = io.WriteString(w, `{"value":"v"}`+"\n")
		})
		tr := s.transport(t, h1.Config{})
		conns := func() int { a, _, _ := s.counts(); return a }

		// A reader that stops at the end of a JSON line, before EOF.
		for range 3 {
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/small", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReaderSize(resp.Body, 16).ReadString('}')
			if err != nil || line != `{"value":"v"}` {
				t.Fatalf("read %q, %v", line, err)
			}
			_ = resp.Body.Close()
		}
		if n := conns(); n != 1 {
			t.Fatalf("answers closed a byte before EOF took %d connections, want 1 (drained)", n)
		}

		req, _ := http.NewRequest(http.MethodGet, s.URL+"/big", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, h1.ErrBodyClosed) {
			t.Errorf("read after Close: %v, want ErrBodyClosed", err)
		}
		if _, body := get(t, tr, s.URL+"/small"); body == "" {
			t.Fatal("no answer after an early close")
		}
		if n := conns(); n != 2 {
			t.Fatalf("after closing 1 MiB early, %d connections, want 2 (the first closed)", n)
		}
	})
}

func TestTLSResumesAndSpeaksHTTP11(t *testing.T) {
	s := newH2Server(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) })
	cfg := s.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.NextProtos = []string{"h2"} // forced back to http/1.1
	tr := h1.New(h1.Config{TLS: cfg})
	defer tr.CloseIdleConnections()

	resp, body := get(t, tr, s.URL)
	if body != "HTTP/1.1" || tlsOf(t, resp).NegotiatedProtocol == "h2" {
		t.Fatalf("server saw %q, ALPN %q: want HTTP/1.1", body, resp.TLS.NegotiatedProtocol)
	}
	if resp.TLS.DidResume {
		t.Fatal("the first connection resumed a session")
	}
	tr.CloseIdleConnections()
	resp, _ = get(t, tr, s.URL)
	if !tlsOf(t, resp).DidResume {
		t.Error("the second connection did not resume the first one's session")
	}
	if cfg.NextProtos[0] != "h2" || cfg.ClientSessionCache != nil {
		t.Error("the caller's tls.Config was modified")
	}
}

// countingRT counts the requests it passes to a real transport.
type countingRT struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(req)
}

func TestFallbackGetsWhatH1DoesNotHandle(t *testing.T) {
	s := newServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})
	viaProxy := s.URL + "/through-proxy"
	fallback := &countingRT{rt: &http.Transport{}}
	defer fallback.rt.(*http.Transport).CloseIdleConnections()
	tr := s.transport(t, h1.Config{
		Fallback: fallback,
		Proxy: func(r *http.Request) (*url.URL, error) {
			if r.URL.String() == viaProxy {
				return url.Parse("http://proxy.invalid:3128")
			}
			return nil, nil
		},
	})
	cases := []struct {
		name     string
		req      func() *http.Request
		fallback bool
	}{
		{"plain", func() *http.Request { r, _ := http.NewRequest("GET", s.URL, nil); return r }, false},
		{"proxied", func() *http.Request { r, _ := http.NewRequest("GET", viaProxy, nil); return r }, true},
		{"expect 100-continue", func() *http.Request {
			r, _ := http.NewRequest("PUT", s.URL, strings.NewReader("v"))
			r.Header.Set("Expect", "100-continue")
			return r
		}, true},
		{"upgrade", func() *http.Request {
			r, _ := http.NewRequest("GET", s.URL, nil)
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
			return r
		}, true},
		{"other scheme", func() *http.Request {
			r, _ := http.NewRequest("GET", "ftp://"+s.Listener.Addr().String(), nil)
			return r
		}, true},
	}
	for _, c := range cases {
		before := fallback.n.Load()
		resp, err := tr.RoundTrip(c.req())
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		if got := fallback.n.Load() > before; got != c.fallback {
			t.Errorf("%s: fallback used %v, want %v (err %v)", c.name, got, c.fallback, err)
		}
	}
}

func TestTLSServerNameIsTheURLHost(t *testing.T) {
	s := newServer(t, true, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.TLS.ServerName) })
	// httptest's certificate names example.com and 127.0.0.1; a URL with a
	// name it lacks must fail verification.
	u := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	_, err := s.transport(t, h1.Config{}).RoundTrip(req)
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("err = %v, want a certificate verification error for localhost", err)
	}
}

// putOnce sends a PUT whose body cannot be replayed, so that it fails if
// it is written on a connection that the server closed.
func putOnce(t *testing.T, tr http.RoundTripper, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, io.NopCloser(strings.NewReader("v")))
	req.ContentLength = 1
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("PUT %s: %v (was the connection pooled after a close?)", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}
