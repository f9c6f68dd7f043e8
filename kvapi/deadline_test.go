package kvapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// stalled is a store whose writes never end on their own, as a primary
// that takes minutes over a bulk write of 10,000 keys: each waits for its
// context and reports how it ended.
type stalled struct {
	*memory.Store
	calls atomic.Int64
	ended chan error
}

func (s *stalled) wait(ctx context.Context) error {
	s.calls.Add(1)
	<-ctx.Done()
	s.ended <- ctx.Err()
	return ctx.Err()
}

func (s *stalled) Put(ctx context.Context, _ string, _ []byte, _ kv.PutOptions) error {
	return s.wait(ctx)
}

func (s *stalled) PutMany(ctx context.Context, _ []kv.Entry) error { return s.wait(ctx) }

// stalledFront serves a stalled store through an HTTPServer whose
// connections' write deadline is write.
func stalledFront(t *testing.T, write time.Duration) (url string, st *stalled) {
	t.Helper()
	st = &stalled{Store: memory.New(memory.Config{}), ended: make(chan error, 1)}
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: st}, AccountID: account, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := kvapi.NewHTTPServer(srv, kvapi.ServeConfig{WriteTimeout: write})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String(), st
}

// TestStoreOutlivingTheWriteDeadline: a write whose store call would run
// past the connection's write deadline is answered before it, with 503
// 10001 and Retry-After in Cloudflare's envelope, through a plain HTTP
// client and through cloudflare-go (cfkv), for a value PUT and a bulk
// write; the store call sees its context end with DeadlineExceeded. Before
// the request's context had a deadline, the handler waited on, the write
// deadline passed, and the client got no answer at all.
func TestStoreOutlivingTheWriteDeadline(t *testing.T) {
	// The margin is 1 s: time enough to write an envelope on a loaded
	// machine (with 4 s, a 400 ms margin, http/bulk failed once at a load of
	// 15). The clients wait three write deadlines, then fail the test.
	const write = 10 * time.Second
	bulk := jsonBody(t, []map[string]any{{"key": "a", "value": "1"}, {"key": "b", "value": "2"}})
	for _, tc := range []struct {
		name string
		send func(t *testing.T, url string)
	}{
		{"http/value", func(t *testing.T, url string) {
			wantTimedOut(t, rawSend(t, url, http.MethodPut, nsPath("values/k"), []byte("v")))
		}},
		{"http/bulk", func(t *testing.T, url string) {
			wantTimedOut(t, rawSend(t, url, http.MethodPut, nsPath("bulk"), bulk))
		}},
		{"cfkv/value", func(t *testing.T, url string) {
			wantTimedOutAPI(t, cfkvStore(t, url).Put(t.Context(), "k", []byte("v"), kv.PutOptions{}))
		}},
		{"cfkv/bulk", func(t *testing.T, url string) {
			wantTimedOutAPI(t, cfkvStore(t, url).PutMany(t.Context(), []kv.Entry{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, st := stalledFront(t, write)
			tc.send(t, url)
			select {
			case err := <-st.ended:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the store's context ended with %v, want its deadline", err)
				}
			default:
				t.Fatal("the store's call did not end before the answer")
			}
		})
	}
}

// rawSend sends a request through a plain net/http client that waits
// three write deadlines for an answer.
func rawSend(t *testing.T, url, method, path string, body []byte) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: the answer was cut: %v", method, path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: raw}
	if err := json.Unmarshal(raw, &r.env); err != nil {
		t.Fatalf("%s %s: not an envelope: %q", method, path, raw)
	}
	checkEnvelope(t, method+" "+path, r)
	var m struct{ Code int }
	_ = json.Unmarshal(r.env.Errors[0], &m)
	r.code = m.Code
	return r
}

func wantTimedOut(t *testing.T, r response) {
	t.Helper()
	wantError(t, "a write past its deadline", r, http.StatusServiceUnavailable, kvapi.CodeUnavailable)
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
}

func cfkvStore(t *testing.T, url string) *cfkv.Store {
	t.Helper()
	st, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: token,
		BaseURL: url + "/client/v4/", MaxRetries: -1, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// wantTimedOutAPI checks that cloudflare-go got the front's envelope, a
// refusal it retries (5xx), not a torn connection.
func wantTimedOutAPI(t *testing.T, err error) {
	t.Helper()
	var ae *cfkv.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != kvapi.CodeUnavailable {
		t.Fatalf("the write failed with %v, want the front's 503 %d", err, kvapi.CodeUnavailable)
	}
}

// TestClientGoneEndsTheStoreCall: the request's context, which has the
// front's deadline, still ends when the client goes away, long before that
// deadline: a store call is not left running for a client that is gone.
func TestClientGoneEndsTheStoreCall(t *testing.T) {
	url, st := stalledFront(t, time.Hour)
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req := "PUT " + nsPath("values/k") + " HTTP/1.1\r\nHost: front\r\n" + auth + "Content-Length: 1\r\n\r\nv"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	// The store is called once the body is read; then the client leaves.
	for st.calls.Load() == 0 {
		runtime.Gosched()
	}
	_ = c.Close()
	select {
	case err := <-st.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the store's context ended with %v, want cancelled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the store's call went on after its client went away")
	}
}
