package kvapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/membudget"
)

// The body limits, applied as the package doc says.
const (
	// MaxBulkBytes bounds a bulk write or delete: Workers KV's 100 MB.
	MaxBulkBytes = 100 << 20
	// MaxBulkGetBytes bounds a bulk/get request: 100 keys of 512 bytes,
	// each JSON-escaped at most 6 times over, fit in it.
	MaxBulkGetBytes = 1 << 20
	// MaxMultipartBytes bounds a multipart PUT: a value of 25 MiB and the
	// small fields beside it.
	MaxMultipartBytes = kv.MaxValueSize + 1<<20
	// maxSmallBody bounds every other body (namespace titles) and bodies
	// sent where none is read.
	maxSmallBody = 64 << 10
)

// bodyFactor is what a body costs the memory budget for each byte read: the
// bytes read, and what is decoded from them (a bulk write's strings, then
// its values).
const bodyFactor = 2

func bodyLimit(ep endpoint, r *http.Request) int64 {
	switch {
	case ep == epValues && r.Method == http.MethodPut:
		if mt, _ := putMediaType(r); mt == "multipart/form-data" {
			return MaxMultipartBytes
		}
		return kv.MaxValueSize
	case ep == epBulk || ep == epBulkDelete:
		return MaxBulkBytes
	case ep == epBulkGet:
		return MaxBulkGetBytes
	}
	return maxSmallBody
}

// putMediaType is a value PUT's media type and its parameters. A raw value
// comes as application/octet-stream, or with no type at all: those cost no
// parse.
func putMediaType(r *http.Request) (string, map[string]string) {
	switch ct := r.Header.Get("Content-Type"); ct {
	case "", "application/octet-stream":
		return ct, nil
	default:
		mt, params, _ := mime.ParseMediaType(ct)
		return mt, params
	}
}

// limitBody refuses a declared length over limit and caps what is read.
func limitBody(w http.ResponseWriter, r *http.Request, limit int64) *apiError {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > 0 {
		// Nothing to bound: left as it is, a GET's body costs no reader of
		// its own nor the memory budget's (ServeHTTP charges only a body),
		// and a declared length, checked above, is all net/http reads.
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return nil
}

func memoryExhausted() *apiError {
	e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable: the server's memory budget is taken by the requests under way; retry shortly")
	e.retryAfter = membudget.RetryAfter
	return e
}

func tooLarge(limit int64) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: the limit is %d bytes", limit)
}

func readError(err error) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	if errors.Is(err, membudget.ErrExhausted) {
		return memoryExhausted()
	}
	return errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: the body could not be read")
}

// readDeclared reads r's body, at most limit bytes: one slice of the
// declared length when there is one (limitBody refused a longer one), what
// readLimited reads when there is none.
func readDeclared(r *http.Request, limit int) ([]byte, *apiError) {
	n := r.ContentLength
	if n <= 0 || n > int64(limit) {
		return readLimited(r.Body, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		return nil, readError(err)
	}
	return b, nil
}

func readLimited(r io.Reader, limit int) ([]byte, *apiError) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, readError(err)
	}
	if len(b) > limit {
		return nil, tooLarge(int64(limit))
	}
	return b, nil
}

// decoder reads one strict JSON document from the request body: numbers
// kept exact, nothing but white space after it.
type decoder struct{ *json.Decoder }

func newDecoder(r *http.Request) decoder {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	return decoder{dec}
}

func (decoder) fail(err error) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, membudget.ErrExhausted) {
		return memoryExhausted()
	}
	return errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: the body is not the expected JSON")
}

func (d decoder) end() *apiError {
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("trailing data")
		}
		return d.fail(err)
	}
	return nil
}

func decodeObject(r *http.Request, v any) *apiError {
	d := newDecoder(r)
	if err := d.Decode(v); err != nil {
		return d.fail(err)
	}
	return d.end()
}

// decodeArray decodes the body as a JSON array of at most max elements,
// one element at a time, so that an oversized batch is refused as soon as
// its element max+1 arrives, without reading the rest.
func decodeArray[T any](r *http.Request, max int, what string) ([]T, *apiError) {
	d := newDecoder(r)
	if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
		return nil, d.fail(err)
	}
	var out []T
	for d.More() {
		if len(out) == max {
			return nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: a bulk %s takes at most %d", what, max)
		}
		var v T
		if err := d.Decode(&v); err != nil {
			return nil, d.fail(err)
		}
		out = append(out, v)
	}
	if _, err := d.Token(); err != nil {
		return nil, d.fail(err)
	}
	if e := d.end(); e != nil {
		return nil, e
	}
	return out, nil
}

// bodyKey is a key in a JSON body, refused when not valid UTF-8 (why: the
// package doc).
type bodyKey string

func (k *bodyKey) UnmarshalJSON(raw []byte) error {
	s, valid, err := kv.UnquoteKey(raw)
	if err != nil {
		return err
	}
	if !valid {
		return errorf(http.StatusBadRequest, CodeIllegalKey, "illegal key name: not valid UTF-8")
	}
	*k = bodyKey(s)
	return nil
}

func (s *Server) keyList(keys []bodyKey) ([]string, *apiError) {
	out := make([]string, len(keys))
	for i, k := range keys {
		if e := s.checkKey(string(k)); e != nil {
			e.message = fmt.Sprintf("key %d: %s", i, e.message)
			return nil, e
		}
		out[i] = string(k)
	}
	return out, nil
}
