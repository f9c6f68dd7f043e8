package kvapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

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
	req, _ := http.NewRequestWithContext(t.Context(), "POST", a.url+nsPath("bulk/get"), strings.NewReader(`{"keys":["a"]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n < int64(len(big)) {
		t.Fatalf("13 MiB: %d, %d bytes", resp.StatusCode, n)
	}
	wantError(t, "26 MiB", a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["a","b"]}`)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
}
