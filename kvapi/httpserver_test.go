package kvapi_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// front is a kvapi server behind a hardened HTTPServer on loopback.
type front struct {
	*api
	addr string
}

func newFront(t *testing.T, cfg kvapi.ServeConfig) *front {
	t.Helper()
	clk := clock.NewFake(start)
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: mem}, AccountID: account, Token: token, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := kvapi.NewHTTPServer(srv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v", err)
		}
	})
	return &front{api: &api{t: t, clk: clk, mem: mem, server: srv, url: "http://" + ln.Addr().String()}, addr: ln.Addr().String()}
}

// raw sends bytes as they are on a new connection and reads one response.
func (f *front) raw(request string) response {
	f.t.Helper()
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, request); err != nil {
		f.t.Fatal(err)
	}
	return readResponse(f.t, bufio.NewReader(c))
}

func readResponse(t *testing.T, br *bufio.Reader) response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, body: body}
	if resp.Header.Get("Content-Type") != "application/json" {
		return r
	}
	if err := json.Unmarshal(body, &r.env); err != nil {
		t.Fatalf("not JSON: %q", body)
	}
	checkEnvelope(t, "raw", r)
	var m struct{ Code int }
	if len(r.env.Errors) > 0 {
		_ = json.Unmarshal(r.env.Errors[0], &m)
	}
	r.code = m.Code
	return r
}

const auth = "Authorization: Bearer " + token + "\r\n"

// TestConcurrencyBound: past MaxConcurrent requests at once, the next is
// answered 503 with Retry-After at once; when one ends, one more is served.
func TestConcurrencyBound(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MaxConcurrent: 2, MaxPerClient: 2})
	f.server.Faults().SetLatency(time.Second) // on the fake clock: holds requests
	done := make(chan response, 2)
	for range 2 {
		go func() { done <- f.do("GET", nsPath("keys"), nil) }()
	}
	for f.clk.Timers() < 2 {
		runtime.Gosched()
	}
	r := f.do("GET", nsPath("keys"), nil)
	wantError(t, "third request", r, http.StatusServiceUnavailable, kvapi.CodeUnavailable)
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	f.server.Faults().SetLatency(0)
	f.clk.Advance(time.Second)
	wantOK(t, "held request", <-done)
	wantOK(t, "held request", <-done)
	wantOK(t, "after the others", f.do("GET", nsPath("keys"), nil))
}

// TestReadHeaderTimeout: a client that never finishes its headers is cut
// off; the defaults are the documented ones.
func TestReadHeaderTimeout(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{ReadHeaderTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET "+nsPath("keys")+" HTTP/1.1\r\nHost: x\r\n")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read = %d, %v; want the server to hang up", n, err)
	}

	srv, _ := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}, Token: token})
	hs, _ := kvapi.NewHTTPServer(srv, kvapi.ServeConfig{})
	h := hs.HTTP()
	// No ReadTimeout of net/http's own: the body guard bounds bodies by it
	// (TestUnreadSlowBodyIsCutOff); without a minimum rate it is net/http's.
	if h.ReadHeaderTimeout != kvapi.DefaultReadHeaderTimeout || h.ReadTimeout != 0 ||
		h.WriteTimeout != kvapi.DefaultWriteTimeout || h.IdleTimeout != kvapi.DefaultIdleTimeout || h.MaxHeaderBytes != kvapi.DefaultMaxHeaderBytes {
		t.Fatalf("defaults %v %v %v %v %d", h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.MaxHeaderBytes)
	}
	hs, _ = kvapi.NewHTTPServer(srv, kvapi.ServeConfig{MinBodyRate: -1})
	if hs.HTTP().ReadTimeout != kvapi.DefaultReadTimeout {
		t.Fatalf("without a minimum body rate the ReadTimeout is %v", hs.HTTP().ReadTimeout)
	}
}

// TestTokenRequired: a front without a client token must be told, and then
// listens on loopback only.
func TestTokenRequired(t *testing.T) {
	open, _ := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}})
	closed, _ := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}, Token: token})
	if _, err := kvapi.NewHTTPServer(open, kvapi.ServeConfig{}); !errors.Is(err, kvapi.ErrUnauthenticated) {
		t.Fatalf("no token, not told = %v", err)
	}
	if _, err := kvapi.NewHTTPServer(closed, kvapi.ServeConfig{Unauthenticated: true}); !errors.Is(err, kvapi.ErrConfig) {
		t.Fatalf("a token and told unauthenticated = %v", err)
	}
	hs, err := kvapi.NewHTTPServer(open, kvapi.ServeConfig{Unauthenticated: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all interfaces here: %v", err)
	}
	defer ln.Close()
	if err := hs.Serve(ln); !errors.Is(err, kvapi.ErrUnauthenticated) {
		t.Fatalf("unauthenticated on %s = %v", ln.Addr(), err)
	}
}

// TestTLS: with a TLSConfig the front speaks TLS, refusals included.
func TestTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: start, NotAfter: start.Add(100 * 365 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	f := newFront(t, kvapi.ServeConfig{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	parsed, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, Time: func() time.Time { return start.Add(time.Hour) }}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS}}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "https://"+f.addr+nsPath("keys"), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("over TLS: %d", resp.StatusCode)
	}
	c, err := tls.Dial("tcp", f.addr, clientTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	if r := readResponse(t, bufio.NewReader(c)); r.status != 400 || r.code != kvapi.CodeInvalidRequest {
		t.Fatalf("bad request over TLS: %d %q", r.status, r.body)
	}
}
