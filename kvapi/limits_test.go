package kvapi_test

import (
	"bytes"
	"errors"
	"fmt"
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
	keys := `{"keys":["` + strings.Repeat("k", kvapi.MaxBulkGetBytes) + `"]}`
	wantError(t, "bulk get over 1 MiB", f.stream("POST", nsPath("bulk/get"), strings.NewReader(keys)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)

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
	wantError(t, "multipart over the cap", f.stream("PUT", nsPath("values/k"), &buf, "Content-Type", w.FormDataContentType()), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
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
	r := a.stream("POST", nsPath("bulk/delete"), &endless{head: head.Bytes(), t: t})
	wantError(t, "10,001 keys", r, http.StatusBadRequest, kvapi.CodeInvalidRequest)
	wantError(t, "bulk write with trailing data", a.do("PUT", nsPath("bulk"), []byte(`[{"key":"k","value":"v"}] [`)), http.StatusBadRequest, kvapi.CodeInvalidRequest)
	if a.mem.Len() != 0 {
		t.Fatal("a refused bulk write was stored")
	}
}

// TestBulkGetResponseCap: bulk get refuses to build more than 25 MiB of
// values, whatever the number of keys.
func TestBulkGetResponseCap(t *testing.T) {
	a := newAPI(t, nil)
	for k, size := range map[string]int{"small": 1 << 20, "large": kv.MaxValueSize} {
		if err := a.mem.Put(t.Context(), k, bytes.Repeat([]byte("v"), size), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if r := a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["small","missing"]}`)); r.status != http.StatusOK || len(r.body) < 1<<20 {
		t.Fatalf("1 MiB: %d, %d bytes", r.status, len(r.body))
	}
	wantError(t, "26 MiB", a.do("POST", nsPath("bulk/get"), []byte(`{"keys":["small","large"]}`)), http.StatusRequestEntityTooLarge, kvapi.CodeTooLarge)
}
