package kvapi_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

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
