package kvapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// The Workers KV error codes the server answers with, from Cloudflare's
// published table of KV API codes.
const (
	CodeAuthentication = 10000 // "Authentication error" (HTTP 403)
	CodeUnavailable    = 10001 // service temporarily unavailable (5xx)
	CodeKeyNotFound    = 10009 // HTTP 404
	CodeNamespaceID    = 10011 // malformed namespace ID
	CodeMalformedValue = 10012 // a bulk value that is not base64
	CodeNoNamespace    = 10013 // namespace not found (HTTP 404)
	CodeTooManyWrites  = 10022 // the per-key write rate (HTTP 429)
	CodeTooLarge       = 10024 // payload too large (HTTP 413)
	CodeInvalidLimit   = 10028 // list limit outside 10..1000
	CodeInvalidRequest = 10029 // malformed body, too many keys in a bulk call
	CodeKeyTooLong     = 10030 // HTTP 414
	CodeExpiration     = 10033 // invalid expiration
	CodeExpirationTTL  = 10034 // invalid expiration_ttl
	CodeInvalidCursor  = 10041 // invalid "list keys" cursor
	CodeIllegalKey     = 10042 // illegal key name
	CodeMetadata       = 10047 // invalid metadata
	CodeNoRoute        = 7000  // no route for the URI
	CodeBadAccount     = 7003  // unknown account identifier
	CodeMethod         = 7001  // method not allowed for the route
)

// The request limits of the API.
const (
	MinListLimit   = 10
	MaxListLimit   = 1000
	MaxBulkWrite   = 10_000
	MaxBulkGet     = 100
	MaxBulkBytes   = 100 << 20
	minExpirySecs  = 60
	notFoundReason = "get: 'key not found'"
)

// message is one entry of an envelope's errors or messages.
type message struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type resultInfo struct {
	Count  int    `json:"count"`
	Cursor string `json:"cursor"`
}

// envelope is Cloudflare's response body for everything but a raw value.
type envelope struct {
	Success    bool        `json:"success"`
	Errors     []message   `json:"errors"`
	Messages   []message   `json:"messages"`
	Result     any         `json:"result"`
	ResultInfo *resultInfo `json:"result_info,omitempty"`
}

// apiError is a refusal with its HTTP status and Cloudflare code. Messages
// never quote keys or values: those are the caller's data.
type apiError struct {
	status     int
	code       int
	message    string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %d %s", e.status, e.code, e.message) }

func errorf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func writeResult(w http.ResponseWriter, result any, info *resultInfo) {
	writeJSON(w, http.StatusOK, envelope{Success: true, Errors: []message{}, Messages: []message{}, Result: result, ResultInfo: info})
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.retryAfter.Seconds()))))
	}
	writeJSON(w, e.status, envelope{Errors: []message{{Code: e.code, Message: e.message}}, Messages: []message{}})
}

func writeJSON(w http.ResponseWriter, status int, body envelope) {
	raw, err := json.Marshal(body)
	if err != nil {
		// Only a result the server built itself is marshalled here.
		raw = []byte(`{"success":false,"errors":[{"code":10001,"message":"internal error"}],"messages":[],"result":null}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

// storeError turns a store's error into the API's answer. The store's own
// message is not forwarded: it may name the key.
func storeError(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, kv.ErrNotFound):
		return errorf(http.StatusNotFound, CodeKeyNotFound, notFoundReason)
	case errors.Is(err, kv.ErrInvalidKey):
		return errorf(http.StatusBadRequest, CodeIllegalKey, "illegal key name")
	case errors.Is(err, kv.ErrInvalidValue):
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large")
	case errors.Is(err, kv.ErrMetadataUnsupported):
		return metadataUnsupported()
	case errors.Is(err, kv.ErrInvalidMetadata):
		return errorf(http.StatusBadRequest, CodeMetadata, "invalid metadata")
	case errors.Is(err, kv.ErrInvalidTTL):
		return errorf(http.StatusBadRequest, CodeExpirationTTL, "invalid expiration ttl")
	case errors.Is(err, kv.ErrInvalidLimit):
		return errorf(http.StatusBadRequest, CodeInvalidLimit, "invalid limit argument")
	case errors.Is(err, kv.ErrInvalidCursor):
		return errorf(http.StatusBadRequest, CodeInvalidCursor, `invalid "list keys" cursor`)
	case errors.Is(err, kv.ErrInvalidPrefix):
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "invalid request: invalid prefix")
	case errors.Is(err, kv.ErrUnavailable):
		ra, _ := kv.RetryAfter(err)
		e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable")
		e.retryAfter = ra
		return e
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable: request cancelled")
	}
	return errorf(http.StatusInternalServerError, CodeUnavailable, "service temporarily unavailable")
}
