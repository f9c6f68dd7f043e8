package cfkv

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// TestRefusalMapping covers the API answers the emulator never gives to
// this client (which validates first): each Workers KV code becomes the
// contract's sentinel, and only 429 and 5xx are retried.
func TestRefusalMapping(t *testing.T) {
	s, err := New(Config{AccountID: "a", NamespaceID: "n", APIToken: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status, code int
		want         error
		retry        bool
	}{
		{404, 10009, kv.ErrNotFound, false},
		{200, 10009, kv.ErrNotFound, false},
		{404, 10013, nil, false},
		{400, 10042, kv.ErrInvalidKey, false},
		{414, 10030, kv.ErrInvalidKey, false},
		{414, 0, kv.ErrInvalidKey, false},
		{413, 10024, kv.ErrInvalidValue, false},
		{400, 10012, kv.ErrInvalidValue, false},
		{400, 10033, kv.ErrInvalidTTL, false},
		{400, 10034, kv.ErrInvalidTTL, false},
		{400, 10028, kv.ErrInvalidLimit, false},
		{400, 10041, kv.ErrInvalidCursor, false},
		{400, 10029, nil, false},
		{403, 10000, nil, false},
		{429, 10022, nil, true},
		{500, 10001, nil, true},
		{502, 0, nil, true},
	} {
		out := s.refusal("op", c.status, http.Header{"Retry-After": {"2"}}, body(c.code, "echo secret-token"))
		if out.retry != c.retry {
			t.Errorf("%d/%d: retry %v, want %v", c.status, c.code, out.retry, c.retry)
		}
		if c.retry && out.retryAfter != 2*time.Second {
			t.Errorf("%d/%d: retry after %s, want 2s", c.status, c.code, out.retryAfter)
		}
		if c.want != nil && !errors.Is(out.err, c.want) {
			t.Errorf("%d/%d = %v, want %v", c.status, c.code, out.err, c.want)
		}
		var apiErr *APIError
		if c.want != kv.ErrNotFound && (!errors.As(out.err, &apiErr) || apiErr.Status != c.status || apiErr.Code != c.code) {
			t.Errorf("%d/%d = %v, want an APIError with both", c.status, c.code, out.err)
		}
		if c.want == nil && !c.retry && errors.Unwrap(out.err) != nil {
			t.Errorf("%d/%d = %v should match no sentinel", c.status, c.code, out.err)
		}
		if out.err != nil && strings.Contains(out.err.Error(), "secret-token") {
			t.Errorf("%d/%d: the token echoed by the server survived: %v", c.status, c.code, out.err)
		}
	}
	// A bulk get's 413 is an answer too large, not a value.
	if out := s.refusal(opBulkGet, 413, http.Header{}, body(10024, "too large")); !errors.Is(out.err, kv.ErrTooLarge) || errors.Is(out.err, kv.ErrInvalidValue) {
		t.Errorf("bulk get 413/10024 = %v, want kv.ErrTooLarge", out.err)
	}
	// A body that is not an envelope still gives a usable error.
	out := s.refusal("get", 502, http.Header{}, []byte("<html>bad gateway</html>"))
	if !out.retry || out.err.Error() != "cfkv: get: HTTP 502: Bad Gateway" {
		t.Fatalf("HTML 502 = %v, retry %v", out.err, out.retry)
	}
	// Retry-After as an HTTP date.
	h := http.Header{"Retry-After": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}
	if ra := s.retryAfter(h); ra < 59*time.Minute || ra > time.Hour {
		t.Fatalf("Retry-After as a date = %s, want about 1h", ra)
	}
}

// A server that echoes the token in another case (a canonicalised header, an
// upper-cased message) must not get it past the scrub.
func TestScrubIgnoresCase(t *testing.T) {
	s, err := New(Config{AccountID: "a", NamespaceID: "n", APIToken: "Secret-Token.x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, echo := range []string{"Secret-Token.x", "SECRET-TOKEN.X", "secret-token.x", "sEcReT-tOkEn.X"} {
		out := s.refusal("op", 400, http.Header{}, body(10029, "bad token "+echo+" given"))
		if strings.Contains(strings.ToLower(out.err.Error()), "secret-token") {
			t.Errorf("echo %q survived the scrub: %v", echo, out.err)
		}
	}
	// The pattern is the token's text, not a regular expression of it.
	out := s.refusal("op", 400, http.Header{}, body(10029, "Secret-Token-x"))
	if !strings.Contains(out.err.Error(), "Secret-Token-x") {
		t.Errorf("a different text was scrubbed: %v", out.err)
	}
}

// body is an error envelope with one error.
func body(code int, msg string) []byte {
	return []byte(`{"success":false,"errors":[{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `"}],"messages":[],"result":null}`)
}

// TestReadBodyOfDeclaredLength holds that a body whose length the response
// declares is read into one slice of that length (it took a reader and a
// buffer grown twice), and that a short one is an error.
func TestReadBodyOfDeclaredLength(t *testing.T) {
	body := strings.NewReader("")
	resp := &http.Response{ContentLength: 7, Body: io.NopCloser(body)}
	allocs := testing.AllocsPerRun(100, func() {
		body.Reset("a value")
		got, err := readBody(resp, 1<<20)
		if err != nil || string(got) != "a value" {
			t.Fatalf("readBody = %q, %v", got, err)
		}
	})
	if allocs > 1 {
		t.Errorf("readBody allocates %v times for a declared length, want 1", allocs)
	}
	resp.Body = io.NopCloser(strings.NewReader("short"))
	if _, err := readBody(resp, 1<<20); err == nil {
		t.Error("a body shorter than its declared length was read without an error")
	}
}
