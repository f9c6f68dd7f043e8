package kvapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"runtime"
	"strings"
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

// TestRawRefusalsAreEnvelopes: what net/http refuses before any handler
// runs comes as Cloudflare's envelope with net/http's status.
func TestRawRefusalsAreEnvelopes(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{})
	for name, c := range map[string]struct {
		request string
		status  int
	}{
		"bad escape":        {"GET " + nsPath("values/%zz") + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 400},
		"raw NUL":           {"GET " + nsPath("values/a\x00b") + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n", 400},
		"no Host":           {"GET " + nsPath("keys") + " HTTP/1.1\r\n" + auth + "\r\n", 400},
		"bad header":        {"GET " + nsPath("keys") + " HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400},
		"headers too large": {"GET " + nsPath("keys") + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", kvapi.DefaultMaxHeaderBytes+4096) + "\r\n\r\n", 431},
		"unknown encoding":  {"PUT " + nsPath("values/k") + " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: rot13\r\n\r\n", 501},
		"unknown Expect":    {"PUT " + nsPath("values/k") + " HTTP/1.1\r\nHost: x\r\nExpect: soon\r\nContent-Length: 1\r\n\r\nv", 417},
	} {
		r := f.raw(c.request)
		if r.status != c.status || r.code != kvapi.CodeInvalidRequest || r.env.Success == nil || *r.env.Success {
			t.Errorf("%s: %d %q, want %d with an envelope", name, r.status, r.body, c.status)
		}
	}
}

// TestRawResponsesUntouched: a value that looks like one of net/http's own
// refusals is served as the bytes it is, on a kept-alive connection too.
func TestRawResponsesUntouched(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{})
	value := "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	for _, size := range []int{len(value), 5000, 70000} {
		v := strings.Repeat("x", size-len(value)) + value
		if err := f.mem.Put(t.Context(), "k", []byte(v), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		for range 2 {
			_, _ = io.WriteString(c, "GET "+nsPath("values/k")+" HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n")
			if r := readResponse(t, br); r.status != 200 || string(r.body) != v {
				t.Fatalf("value of %d bytes came back as %d %q...", size, r.status, r.body[:min(len(r.body), 40)])
			}
		}
		// A bad request after a good one is still an envelope.
		_, _ = io.WriteString(c, "GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n")
		if r := readResponse(t, br); r.status != 400 || r.code != kvapi.CodeInvalidRequest {
			t.Fatalf("bad request after a value: %d %q", r.status, r.body)
		}
		c.Close()
	}
}

// TestDeclaredLengthRefused: a body declared over the limit is refused
// before any of it is sent.
func TestDeclaredLengthRefused(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{})
	for name, c := range map[string]struct{ head string }{
		"value":     {"PUT " + nsPath("values/k") + " HTTP/1.1\r\nContent-Length: " + fmt.Sprint(kv.MaxValueSize+1) + "\r\n"},
		"multipart": {"PUT " + nsPath("values/k") + " HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: " + fmt.Sprint(kvapi.MaxMultipartBytes+1) + "\r\n"},
		"bulk":      {"PUT " + nsPath("bulk") + " HTTP/1.1\r\nContent-Length: " + fmt.Sprint(kvapi.MaxBulkBytes+1) + "\r\n"},
		"bulk get":  {"POST " + nsPath("bulk/get") + " HTTP/1.1\r\nContent-Length: " + fmt.Sprint(kvapi.MaxBulkGetBytes+1) + "\r\n"},
		"keys":      {"GET " + nsPath("keys") + " HTTP/1.1\r\nContent-Length: 1000000\r\n"},
	} {
		r := f.raw(c.head + "Host: x\r\n" + auth + "\r\n") // and no body at all
		if r.status != http.StatusRequestEntityTooLarge || r.code != kvapi.CodeTooLarge {
			t.Errorf("%s: %d %q, want 413 code %d", name, r.status, r.body, kvapi.CodeTooLarge)
		}
	}
}

// TestBodyCaps: a body that declares no length is cut off at the limit.
func TestBodyCaps(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{})
	chunked := func(method, path, contentType string, body io.Reader) response {
		req, _ := http.NewRequestWithContext(t.Context(), method, f.url+path, io.NopCloser(body)) // no length: chunked
		req.Header.Set("Authorization", "Bearer "+token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		r := response{status: resp.StatusCode, body: raw}
		_ = json.Unmarshal(raw, &r.env)
		var m struct{ Code int }
		if len(r.env.Errors) > 0 {
			_ = json.Unmarshal(r.env.Errors[0], &m)
		}
		r.code = m.Code
		return r
	}
	keys := `{"keys":["` + strings.Repeat("k", kvapi.MaxBulkGetBytes) + `"]}`
	wantError(t, "bulk get over 1 MiB", chunked("POST", nsPath("bulk/get"), "", strings.NewReader(keys)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)

	// A multipart PUT whose fields beside the value pass the overall cap.
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, _ := w.CreateFormFile("value", "blob")
	_, _ = fw.Write([]byte("v"))
	for i := 0; buf.Len() <= kvapi.MaxMultipartBytes; i++ {
		fw, _ := w.CreateFormField(fmt.Sprintf("junk%d", i))
		_, _ = fw.Write(bytes.Repeat([]byte("j"), 1<<20))
	}
	_ = w.Close()
	wantError(t, "multipart over the cap", chunked("PUT", nsPath("values/k"), w.FormDataContentType(), &buf), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
	if _, err := f.mem.Get(t.Context(), "k"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("a refused multipart PUT was stored")
	}
}

// endless is a body that never ends; reading past its start fails a test.
type endless struct {
	head []byte
	t    *testing.T
	read int
}

func (e *endless) Read(p []byte) (int, error) {
	if len(e.head) > 0 {
		n := copy(p, e.head)
		e.head = e.head[n:]
		e.read += n
		return n, nil
	}
	for i := range p {
		p[i] = ' '
	}
	if e.read += len(p); e.read > 64<<20 {
		return 0, errors.New("the server read on past the 10,001st key")
	}
	return len(p), nil
}

// TestBulkStream: a bulk delete of 10,001 keys is refused when the
// 10,001st arrives, however long the body goes on.
func TestBulkStream(t *testing.T) {
	a := newAPI(t, nil)
	var head bytes.Buffer
	head.WriteString("[")
	for i := range kvapi.MaxBulkWrite + 1 {
		fmt.Fprintf(&head, `"k%05d",`, i)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", a.url+nsPath("bulk/delete"), &endless{head: head.Bytes(), t: t})
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"code":10029`) {
		t.Fatalf("10,001 keys: %d %s", resp.StatusCode, raw)
	}
	wantError(t, "bulk write with trailing data", a.do("PUT", nsPath("bulk"), []byte(`[{"key":"k","value":"v"}] [`)), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	if a.mem.Len() != 0 {
		t.Fatal("a refused bulk write was stored")
	}
}

// TestBulkGetResponseCap: bulk get refuses to build more than 25 MiB of
// values, whatever the number of keys.
func TestBulkGetResponseCap(t *testing.T) {
	a := newAPI(t, nil)
	big := bytes.Repeat([]byte("v"), 13<<20)
	for _, k := range []string{"a", "b"} {
		if err := a.mem.Put(t.Context(), k, big, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["a"]}`))
	if wantOK(t, "13 MiB", r); len(r.body) < len(big) {
		t.Fatalf("13 MiB came back in %d bytes", len(r.body))
	}
	wantError(t, "26 MiB", a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["a","b"]}`)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
}

// TestConcurrencyBound: past MaxConcurrent requests at once, the next is
// answered 503 with Retry-After at once; when one ends, one more is served.
func TestConcurrencyBound(t *testing.T) {
	f := newFront(t, kvapi.ServeConfig{MaxConcurrent: 2})
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
	if h.ReadHeaderTimeout != kvapi.DefaultReadHeaderTimeout || h.ReadTimeout != kvapi.DefaultReadTimeout ||
		h.WriteTimeout != kvapi.DefaultWriteTimeout || h.IdleTimeout != kvapi.DefaultIdleTimeout || h.MaxHeaderBytes != kvapi.DefaultMaxHeaderBytes {
		t.Fatalf("defaults %v %v %v %v %d", h.ReadHeaderTimeout, h.ReadTimeout, h.WriteTimeout, h.IdleTimeout, h.MaxHeaderBytes)
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
