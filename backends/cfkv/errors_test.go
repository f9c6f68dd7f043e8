package cfkv_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// refusingAPI answers every request with status, the header and body,
// and counts the requests.
func refusingAPI(t *testing.T, status int, header http.Header, body string) (*cfkv.Store, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(hs.Close)
	st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken,
		BaseURL: hs.URL + "/client/v4/", HTTPClient: hs.Client(), MaxRetries: 2, RetryBackoff: time.Millisecond, MaxRetryWait: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return st, &requests
}

// envelopeOf is an error envelope with one error.
func envelopeOf(code int, msg string) string {
	return `{"success":false,"errors":[{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `"}],"messages":[],"result":null}`
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// TestCloudflareErrorsMapped: each refusal Cloudflare answers, which the
// SDK types as its *cloudflare.Error (or, for a body that is no envelope,
// leaves untyped with its status), comes out of a value read (the SDK's
// raw answer) and of a write (its envelope, which cfkv reads) alike: a missing key
// as kv.ErrNotFound, a validation code as the contract's sentinel, a
// missing namespace or a refused token as an APIError naming no sentinel,
// tried once, and 429 and 5xx retried, then kv.ErrUnavailable with the
// server's Retry-After; a token echoed by the server never comes out.
func TestCloudflareErrorsMapped(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		header http.Header
		body   string
		want   error // the sentinel; nil for an APIError that names none
		retry  bool
	}{
		{"missing key", 404, jsonHeader, envelopeOf(10009, "key not found"), kv.ErrNotFound, false},
		{"missing key, 200", 200, jsonHeader, envelopeOf(10009, "key not found"), kv.ErrNotFound, false},
		{"missing namespace", 404, jsonHeader, envelopeOf(10013, "namespace not found"), nil, false},
		{"unauthorized", 401, jsonHeader, envelopeOf(10000, "Authentication error"), kv.ErrAccessDenied, false},
		{"forbidden", 403, jsonHeader, envelopeOf(10000, "Authentication error for "+testToken), kv.ErrAccessDenied, false},
		{"forbidden, plain", 403, http.Header{"Content-Type": {"text/html"}}, "<html>Forbidden</html>", kv.ErrAccessDenied, false},
		{"rate limited", 429, http.Header{"Content-Type": {"application/json"}, "Retry-After": {"0.002"}}, envelopeOf(10022, "too many requests"), nil, true},
		{"internal error", 500, http.Header{"Content-Type": {"application/json"}, "Retry-After": {"0.002"}}, envelopeOf(10001, "internal"), nil, true},
		{"bad gateway, HTML", 502, http.Header{"Content-Type": {"text/html"}, "Retry-After": {"0.002"}}, "<html>bad gateway</html>", nil, true},
		{"too large", 413, jsonHeader, envelopeOf(10024, "value too large"), kv.ErrInvalidValue, false},
		{"too large, plain", 413, http.Header{"Content-Type": {"text/plain"}}, "Payload Too Large", kv.ErrInvalidValue, false},
		{"key too long", 414, jsonHeader, envelopeOf(10030, "key too long"), kv.ErrInvalidKey, false},
		{"bad key", 400, jsonHeader, envelopeOf(10042, "invalid key"), kv.ErrInvalidKey, false},
		{"bad value", 400, jsonHeader, envelopeOf(10012, "invalid value"), kv.ErrInvalidValue, false},
		{"bad expiration", 400, jsonHeader, envelopeOf(10033, "invalid expiration"), kv.ErrInvalidTTL, false},
		{"bad TTL", 400, jsonHeader, envelopeOf(10034, "invalid expiration_ttl"), kv.ErrInvalidTTL, false},
		{"bad limit", 400, jsonHeader, envelopeOf(10028, "invalid limit"), kv.ErrInvalidLimit, false},
		{"bad cursor", 400, jsonHeader, envelopeOf(10041, "invalid cursor"), kv.ErrInvalidCursor, false},
		{"other validation", 400, jsonHeader, envelopeOf(10029, "something else"), nil, false},
	} {
		for _, op := range []string{"get", "put"} {
			st, requests := refusingAPI(t, c.status, c.header, c.body)
			var err error
			if op == "get" {
				_, err = st.Get(t.Context(), "k")
			} else {
				err = st.Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
			}
			what := c.name + " on " + op
			if err == nil {
				t.Errorf("%s: no error", what)
				continue
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("%s: the token echoed by the server survived: %v", what, err)
			}
			wantRequests := int64(1)
			if c.retry {
				wantRequests = 3
				if ra, ok := kv.RetryAfter(err); !ok || ra != 2*time.Millisecond {
					t.Errorf("%s = %v, want kv.ErrUnavailable with the server's Retry-After", what, err)
				}
			} else if errors.Is(err, kv.ErrUnavailable) {
				t.Errorf("%s = %v, unavailable", what, err)
			}
			if n := requests.Load(); n != wantRequests {
				t.Errorf("%s: %d requests, want %d", what, n, wantRequests)
			}
			if c.want == kv.ErrNotFound {
				if err != kv.ErrNotFound {
					t.Errorf("%s = %v, want kv.ErrNotFound itself", what, err)
				}
				continue
			}
			var apiErr *cfkv.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != c.status {
				t.Errorf("%s = %v, want an APIError of HTTP %d", what, err, c.status)
				continue
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s = %v, want %v", what, err, c.want)
			}
			if c.want == nil && !c.retry && errors.Unwrap(err) != nil {
				t.Errorf("%s = %v should match no sentinel", what, err)
			}
			if errors.Is(err, kv.ErrNotFound) {
				t.Errorf("%s = %v matches kv.ErrNotFound", what, err)
			}
		}
	}
	// A missing key's delete is done.
	st, _ := refusingAPI(t, 404, jsonHeader, envelopeOf(10009, "key not found"))
	if err := st.Delete(t.Context(), "k"); err != nil {
		t.Errorf("Delete of a missing key = %v", err)
	}
	// A bulk get's 413 is an answer too large, not a value.
	st, _ = refusingAPI(t, 413, jsonHeader, envelopeOf(10024, "too large"))
	if _, err := st.GetMany(t.Context(), []string{"a", "b"}); !errors.Is(err, kv.ErrTooLarge) || errors.Is(err, kv.ErrInvalidValue) {
		t.Errorf("bulk get 413/10024 = %v, want kv.ErrTooLarge", err)
	}
	// A body that is no envelope still gives a usable error.
	st, _ = refusingAPI(t, 502, http.Header{"Content-Type": {"text/html"}}, "<html>bad gateway</html>")
	if _, err := st.Get(t.Context(), "k"); err == nil || !strings.Contains(err.Error(), "cfkv: get: HTTP 502: Bad Gateway") {
		t.Errorf("HTML 502 = %v", err)
	}
}

// TestRetryAfterAsADate: Retry-After as an HTTP date is the wait until it.
func TestRetryAfterAsADate(t *testing.T) {
	st, _ := refusingAPI(t, 503, http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, envelopeOf(10001, "down"))
	_, err := st.Get(t.Context(), "k")
	if ra, ok := kv.RetryAfter(err); !ok || ra < 59*time.Minute || ra > time.Hour {
		t.Fatalf("Get = %v, want unavailable for about 1h", err)
	}
}

// A server that echoes the token in another case (a canonicalised header, an
// upper-cased message) must not get it past the scrub.
func TestScrubIgnoresCase(t *testing.T) {
	const token = "Secret-Token.x"
	for _, echo := range []string{"Secret-Token.x", "SECRET-TOKEN.X", "secret-token.x", "sEcReT-tOkEn.X", "Secret-Token-x"} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_, _ = w.Write([]byte(envelopeOf(10029, "bad token "+echo+" given")))
		}))
		st, err := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: token, BaseURL: hs.URL + "/client/v4/"})
		if err != nil {
			t.Fatal(err)
		}
		err = st.Put(t.Context(), "k", []byte("v"), kv.PutOptions{})
		hs.Close()
		switch scrubbed := !strings.Contains(strings.ToLower(err.Error()), "secret-token"); {
		case echo == "Secret-Token-x" && scrubbed: // the pattern is the token's text, not a regular expression of it
			t.Errorf("a different text was scrubbed: %v", err)
		case echo != "Secret-Token-x" && !scrubbed:
			t.Errorf("echo %q survived the scrub: %v", echo, err)
		}
	}
}
