package cfkv_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// stallingAPI is the emulator behind a handler that makes its first stalls
// requests wait until they are given up, either before any answer or, with
// midBody, after the headers of a value GET's answer; one not given up
// within a long while is answered with another value, "late". It counts
// every request.
type stallingAPI struct {
	api      http.Handler
	stalls   atomic.Int64
	midBody  bool
	requests atomic.Int64
}

func (s *stallingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.stalls.Add(-1) >= 0 {
		if s.midBody {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("the first bytes of a value"))
			http.NewResponseController(w).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
			_, _ = w.Write([]byte("late"))
		}
		return
	}
	s.api.ServeHTTP(w, r)
}

func newStallingAPI(t *testing.T, stalls int64, midBody bool) (*stallingAPI, *httptest.Server) {
	t.Helper()
	mem := memory.New(memory.Config{})
	if err := mem.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{testNamespace: mem}, AccountID: testAccount, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingAPI{api: api, midBody: midBody}
	s.stalls.Store(stalls)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

// TestRequestTimeoutBoundsEachTry: a try that gets no answer, or stops in
// the middle of one, is given up after RequestTimeout and tried again; when
// every try stalls the call is unavailable, saying so; a caller's deadline
// shorter than RequestTimeout serves instead, and its end is the caller's,
// not retried.
func TestRequestTimeoutBoundsEachTry(t *testing.T) {
	open := func(hs *httptest.Server, retries int) *cfkv.Store {
		st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken,
			BaseURL: hs.URL + "/client/v4/", HTTPClient: hs.Client(), MaxRetries: retries,
			RetryBackoff: time.Millisecond, MaxRetryWait: time.Millisecond, RequestTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The tries after the stalled one may take longer than RequestTimeout
	// on a loaded machine: retries enough that one of them ends.
	for _, midBody := range []bool{false, true} {
		s, hs := newStallingAPI(t, 1, midBody)
		got, err := open(hs, 20).Get(t.Context(), "k")
		if err != nil || string(got) != "v" || s.requests.Load() < 2 {
			t.Fatalf("mid-body %t: Get after one stalled try = %q, %v in %d requests, want v in 2 or more", midBody, got, err, s.requests.Load())
		}
	}
	s, hs := newStallingAPI(t, 2, false)
	_, err := open(hs, 1).Get(t.Context(), "k")
	if !errors.Is(err, kv.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 200ms") || s.requests.Load() != 2 {
		t.Fatalf("Get with every try stalled: %v in %d requests, want unavailable in 2", err, s.requests.Load())
	}
	s, hs = newStallingAPI(t, 1, false)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = open(hs, 3).Get(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kv.ErrUnavailable) || s.requests.Load() != 1 {
		t.Fatalf("Get past the caller's deadline: %v in %d requests, want the caller's deadline in 1", err, s.requests.Load())
	}
}

// TestRedirectsAreFollowed: the store's client follows a redirect as
// net/http's client does, a write's body sent again, although the request
// goes to the client's transport directly.
func TestRedirectsAreFollowed(t *testing.T) {
	_, api := newStallingAPI(t, 0, false)
	moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, _ := strings.CutPrefix(r.URL.RequestURI(), "/moved/")
		w.Header().Set("Location", api.URL+"/client/v4/"+rest)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(moved.Close)
	st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken,
		BaseURL: moved.URL + "/moved/", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), "w", []byte("written"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put through a redirect: %v", err)
	}
	if got, err := st.Get(t.Context(), "w"); err != nil || string(got) != "written" {
		t.Fatalf("Get through a redirect = %q, %v", got, err)
	}
}

// TestWriteAnswersAreEnvelopes: a write answered 200 with a body that is
// not an envelope (no success field) or with success:false fails, though
// only its success is decoded.
func TestWriteAnswersAreEnvelopes(t *testing.T) {
	for body, want := range map[string]string{`{"result":null}`: "not a Cloudflare API envelope", `not json`: "not a Cloudflare API envelope",
		`{"success":false,"errors":[{"code":10001,"message":"refused"}]}`: "code 10001: refused"} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
		st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken, BaseURL: hs.URL + "/client/v4/", MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		var apiErr *cfkv.APIError
		if err := st.Put(t.Context(), "k", []byte("v"), kv.PutOptions{}); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), want) {
			t.Errorf("Put answered %s: %v, want an APIError saying %q", body, err, want)
		}
		if err := st.Delete(t.Context(), "k"); !errors.As(err, &apiErr) || !strings.Contains(err.Error(), want) {
			t.Errorf("Delete answered %s: %v, want an APIError saying %q", body, err, want)
		}
		hs.Close()
	}
}
