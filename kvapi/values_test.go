package kvapi_test

import (
	"bytes"
	"errors"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

func TestValueLifecycle(t *testing.T) {
	a := newAPI(t, nil)
	r := a.do("PUT", nsPath("values/k"), []byte("hello\x00\xff"))
	wantOK(t, "PUT", r)
	if string(r.env.Result) != "null" {
		t.Fatalf("PUT result = %s, want null", r.env.Result)
	}
	r = a.do("GET", nsPath("values/k"), nil)
	wantOK(t, "GET", r)
	if string(r.body) != "hello\x00\xff" || r.header.Get("Content-Type") != "application/octet-stream" || r.header.Get("Expiration") != "" {
		t.Fatalf("GET = %q, %v", r.body, r.header)
	}
	r = a.do("GET", nsPath("metadata/k"), nil)
	wantOK(t, "GET metadata", r)
	if string(r.env.Result) != "null" {
		t.Fatalf("metadata result = %s, want null (the store keeps none)", r.env.Result)
	}
	wantOK(t, "DELETE", a.do("DELETE", nsPath("values/k"), nil))
	r = a.do("GET", nsPath("values/k"), nil)
	wantError(t, "GET after DELETE", r, http.StatusNotFound, kvapi.CodeKeyNotFound)
	if r.message != "get: 'key not found'" {
		t.Fatalf("not-found message %q", r.message)
	}
	wantError(t, "GET metadata of missing", a.do("GET", nsPath("metadata/k"), nil), http.StatusNotFound, kvapi.CodeKeyNotFound)
	wantOK(t, "DELETE missing", a.do("DELETE", nsPath("values/k"), nil))

	// An empty value is a value.
	wantOK(t, "PUT empty", a.do("PUT", nsPath("values/empty"), nil))
	r = a.do("GET", nsPath("values/empty"), nil)
	if r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("GET empty = %d %q", r.status, r.body)
	}
}

func TestExpirations(t *testing.T) {
	a := newAPI(t, nil)
	now := a.clk.Now().Unix()
	wantOK(t, "PUT ttl", a.do("PUT", nsPath("values/ttl?expiration_ttl=120"), []byte("v")))
	if got := a.do("GET", nsPath("values/ttl"), nil).header.Get("Expiration"); got != strconv.FormatInt(now+120, 10) {
		t.Fatalf("expiration header %q, want %d", got, now+120)
	}
	abs := now + 3600
	wantOK(t, "PUT abs", a.do("PUT", nsPath("values/abs?expiration="+strconv.FormatInt(abs, 10)), []byte("v")))
	if e, _ := a.mem.GetEntry(t.Context(), "abs"); e.Expiration.Unix() != abs {
		t.Fatalf("stored expiration %v, want %d", e.Expiration, abs)
	}
	// expiration_ttl wins over expiration.
	wantOK(t, "PUT both", a.do("PUT", nsPath("values/both?expiration=1&expiration_ttl=60"), []byte("v")))
	if e, _ := a.mem.GetEntry(t.Context(), "both"); e.Expiration.Unix() != now+60 {
		t.Fatalf("both: expiration %v, want the TTL's", e.Expiration)
	}
	// A write without expiry clears it.
	wantOK(t, "PUT again", a.do("PUT", nsPath("values/ttl"), []byte("v")))
	if got := a.do("GET", nsPath("values/ttl"), nil).header.Get("Expiration"); got != "" {
		t.Fatalf("expiration after a plain PUT = %q", got)
	}
	a.clk.Advance(61 * time.Second)
	wantError(t, "GET after the TTL", a.do("GET", nsPath("values/both"), nil), http.StatusNotFound, kvapi.CodeKeyNotFound)

	for name, q := range map[string]string{
		"ttl 59":         "expiration_ttl=59",
		"ttl 0":          "expiration_ttl=0",
		"ttl negative":   "expiration_ttl=-5",
		"ttl not number": "expiration_ttl=soon",
		"ttl fraction":   "expiration_ttl=60.5",
	} {
		wantError(t, name, a.do("PUT", nsPath("values/x?"+q), []byte("v")), http.StatusBadRequest, kvapi.CodeExpirationTTL)
	}
	now = a.clk.Now().Unix()
	for name, exp := range map[string]string{
		"past":       strconv.FormatInt(now-10, 10),
		"now":        strconv.FormatInt(now, 10),
		"in 59s":     strconv.FormatInt(now+59, 10),
		"not number": "tomorrow",
	} {
		wantError(t, "expiration "+name, a.do("PUT", nsPath("values/x?expiration="+exp), []byte("v")), http.StatusBadRequest, kvapi.CodeExpiration)
	}
	if _, err := a.mem.Get(t.Context(), "x"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("a refused write was stored")
	}
}

// TestKeysAtTheServer: a key arrives URL-encoded as one path segment and
// is decoded exactly once.
func TestKeysAtTheServer(t *testing.T) {
	a := newAPI(t, nil)
	keys := []string{"a/../b", "../x", "./", "a?b", "?", "#", "a#b", "%", "100%", "a%2Fb", "%zz", " ", "a b", "a+b", "日本語", "😀", "\x00", "..."}
	for _, k := range keys {
		wantOK(t, "PUT "+k, a.do("PUT", nsPath("values/"+url.PathEscape(k)), []byte(k)))
	}
	res, _ := a.mem.List(t.Context(), kv.ListOptions{})
	if want := slices.Sorted(slices.Values(keys)); !slices.Equal(res.Keys, want) {
		t.Fatalf("server stored %q, want %q", res.Keys, want)
	}
	for _, k := range keys {
		r := a.do("GET", nsPath("values/"+url.PathEscape(k)), nil)
		if r.status != http.StatusOK || string(r.body) != k {
			t.Fatalf("GET %q = %d %q", k, r.status, r.body)
		}
	}
	// Escaping only what must be escaped works too, and an unescaped "/"
	// belongs to the key, as the API reads the rest of the path as the key.
	wantOK(t, "PUT", a.do("PUT", nsPath("values/x%3Fy%23z%25"), []byte("1")))
	wantOK(t, "PUT", a.do("PUT", nsPath("values/dir/file"), []byte("2")))
	for k, v := range map[string]string{"x?y#z%": "1", "dir/file": "2"} {
		if got, err := a.mem.Get(t.Context(), k); err != nil || string(got) != v {
			t.Fatalf("server holds %q = %q, %v", k, got, err)
		}
	}

	long := strings.Repeat("k", kv.MaxKeySize+1)
	wantError(t, "key too long", a.do("PUT", nsPath("values/"+long), []byte("v")), http.StatusRequestURITooLong, kvapi.CodeKeyTooLong)
	wantOK(t, "longest key", a.do("PUT", nsPath("values/"+long[1:]), []byte("v")))
	for name, k := range map[string]string{"dot": ".", "dotdot": "..", "encoded dotdot": "%2E%2E", "not UTF-8": "%FF"} {
		wantError(t, "key "+name, a.do("PUT", nsPath("values/"+k), []byte("v")), http.StatusBadRequest, kvapi.CodeIllegalKey)
	}
	wantError(t, "empty key", a.do("GET", nsPath("values/"), nil), http.StatusBadRequest, kvapi.CodeIllegalKey)
}

func TestValueTooLarge(t *testing.T) {
	a := newAPI(t, nil)
	wantError(t, "PUT 25 MiB + 1", a.do("PUT", nsPath("values/big"), make([]byte, kv.MaxValueSize+1)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
	wantOK(t, "PUT 25 MiB", a.do("PUT", nsPath("values/big"), make([]byte, kv.MaxValueSize)))
}

// TestMultipartWrite: the form the SDK's typed Update sends (value and
// metadata fields), with the expiry in the query or the form.
func TestMultipartWrite(t *testing.T) {
	a := newAPI(t, nil)
	form := func(fields map[string]string) ([]byte, string) {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range fields {
			if k == "value" {
				fw, _ := w.CreateFormFile("value", "blob")
				_, _ = fw.Write([]byte(v))
			} else {
				_ = w.WriteField(k, v)
			}
		}
		_ = w.Close()
		return buf.Bytes(), w.FormDataContentType()
	}
	body, ct := form(map[string]string{"value": "bytes\xff", "metadata": `{"module":"wordle"}`})
	wantOK(t, "multipart PUT", a.do("PUT", nsPath("values/m?expiration_ttl=300"), body, "Content-Type", ct))
	e, err := a.mem.GetEntry(t.Context(), "m")
	if err != nil || string(e.Value) != "bytes\xff" || e.Expiration.Unix() != a.clk.Now().Unix()+300 {
		t.Fatalf("stored %q expiring %v, %v", e.Value, e.Expiration, err)
	}
	body, ct = form(map[string]string{"value": "v", "expiration_ttl": "120"})
	wantOK(t, "multipart PUT with the TTL in the form", a.do("PUT", nsPath("values/f"), body, "Content-Type", ct))
	if e, _ := a.mem.GetEntry(t.Context(), "f"); e.Expiration.Unix() != a.clk.Now().Unix()+120 {
		t.Fatalf("form TTL ignored: %v", e.Expiration)
	}
	wantError(t, "broken multipart", a.do("PUT", nsPath("values/b"), []byte("--x\r\nnonsense"), "Content-Type", "multipart/form-data; boundary=x"), http.StatusBadRequest, kvapi.CodeInvalidRequest)
}

// TestValueGetAllocations holds what the front's value GET allocates for
// itself, over a store whose Get copies the value once: the headers' values
// (one allocation for all three) and the expiry's digits; no hold on the
// memory budget of its own (the server reuses them), no reader for a GET's
// absent body, no match slice for the token (10 allocations before, then
// 4 with a hold per request).
func TestValueGetAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops what is put back at random")
	}
	a := newAPI(t, nil)
	if err := a.mem.Put(t.Context(), "k", []byte("a value"), kv.PutOptions{Expiration: start.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://front"+nsPath("values/k"), http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	w := &reusedWriter{header: http.Header{}}
	allocs := testing.AllocsPerRun(100, func() {
		clear(w.header)
		w.status = 0
		a.server.ServeHTTP(w, req)
	})
	if w.status != http.StatusOK || w.header.Get("Expiration") == "" || w.header.Get("Content-Length") != "7" {
		t.Fatalf("GET answered %d with %v", w.status, w.header)
	}
	// The store's copy of the value, the headers' values and the expiry's
	// digits.
	if allocs > 3 {
		t.Errorf("a value GET allocates %v times in the front, want at most 3", allocs)
	}
}

// TestValuePutAllocations holds what the front's raw value PUT allocates,
// over the memory store: the value read into one slice of its declared
// length, the reader that charges it to the memory budget, the store's own
// (its copy and its entry) and the answer's header map. The answer is
// encoded once for all writes, its header values shared, its body not parsed
// for a media type nor bounded again past its declared length, and a PUT
// without a query parses none (14 allocations before).
func TestValuePutAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops what is put back at random")
	}
	a := newAPI(t, nil)
	value := []byte(`{"word":"apple","guesses":4}`)
	body := &rewound{Reader: bytes.NewReader(value)}
	req, err := http.NewRequestWithContext(t.Context(), "PUT", "http://front"+nsPath("values/k"), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/octet-stream")
	w := &reusedWriter{header: http.Header{}}
	allocs := testing.AllocsPerRun(100, func() {
		clear(w.header)
		w.status = 0
		body.Reset(value)
		req.Body = body
		a.server.ServeHTTP(w, req)
	})
	if w.status != http.StatusOK || w.header.Get("Content-Type") != "application/json" {
		t.Fatalf("PUT answered %d with %v", w.status, w.header)
	}
	if got, err := a.mem.Get(t.Context(), "k"); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("stored %q, %v", got, err)
	}
	if allocs > 5 {
		t.Errorf("a value PUT allocates %v times in the front, want at most 5", allocs)
	}
}

// rewound is a request body that a test rewinds for each request.
type rewound struct{ *bytes.Reader }

func (rewound) Close() error { return nil }

// reusedWriter is a ResponseWriter whose header map keeps its room from
// one request to the next, so that only the handler's allocations count.
type reusedWriter struct {
	header http.Header
	status int
}

func (w *reusedWriter) Header() http.Header         { return w.header }
func (w *reusedWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *reusedWriter) WriteHeader(code int)        { w.status = code }
