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
	"github.com/kvshadow/kvshadow/membudget"
)

type message struct {
	Code       int       `json:"code"`
	Message    string    `json:"message"`
	ErrorChain []message `json:"error_chain,omitempty"`
}

type cursorInfo struct {
	Count  int    `json:"count"`
	Cursor string `json:"cursor"`
}

type pageInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
	TotalPages int `json:"total_pages"`
}

// envelope is Cloudflare's response body for everything but a raw value.
type envelope struct {
	Success    bool      `json:"success"`
	Errors     []message `json:"errors"`
	Messages   []message `json:"messages"`
	Result     any       `json:"result"`
	ResultInfo any       `json:"result_info,omitempty"`
}

// apiError is a refusal with its HTTP status and Cloudflare code. Messages
// never quote keys or values: those are the caller's data.
type apiError struct {
	status     int
	code       int
	message    string
	retryAfter time.Duration
	chain      []message // the error's error_chain, if any
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %d %s", e.status, e.code, e.message) }

func errorf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// writeResult answers success with result; info is the result_info, nil
// for none.
func writeResult(w http.ResponseWriter, result any, info any) {
	if result == nil && info == nil {
		// A write's answer, the same every time: encoded once.
		writeRaw(w, http.StatusOK, plainSuccess, plainSuccessLength)
		return
	}
	writeJSON(w, http.StatusOK, envelope{Success: true, Errors: []message{}, Messages: []message{}, Result: result, ResultInfo: info})
}

// plainSuccess is the envelope of a success without a result, and its
// Content-Length header's value.
var (
	plainSuccess, _    = json.Marshal(envelope{Success: true, Errors: []message{}, Messages: []message{}})
	plainSuccessLength = []string{strconv.Itoa(len(plainSuccess))}
)

// jsonType is every envelope's Content-Type. Header values set from shared
// slices are only ever read: net/http copies a response's header when it is
// written, and a slice capped at its length cannot be appended to in place.
var jsonType = []string{"application/json"}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.retryAfter.Seconds()))))
	}
	writeJSON(w, e.status, envelope{Errors: []message{{Code: e.code, Message: e.message, ErrorChain: e.chain}}, Messages: []message{}})
}

func writeJSON(w http.ResponseWriter, status int, body envelope) {
	raw, err := json.Marshal(body)
	if err != nil {
		// Only a result the server built itself is marshalled here.
		raw = []byte(`{"success":false,"errors":[{"code":10001,"message":"internal error"}],"messages":[],"result":null}`)
		status = http.StatusInternalServerError
	}
	writeRaw(w, status, raw, []string{strconv.Itoa(len(raw))})
}

func writeRaw(w http.ResponseWriter, status int, raw []byte, length []string) {
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = jsonType, length
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
	case errors.Is(err, kv.ErrTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "payload too large: the values requested exceed the limit of one answer; ask for fewer keys")
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
	case errors.Is(err, membudget.ErrExhausted):
		return memoryExhausted()
	case errors.Is(err, kv.ErrAccessDenied):
		// The store behind this server (a proxy's Workers KV) refuses the
		// server's own credentials: not the client's doing, nor a retry's.
		return errorf(http.StatusBadGateway, CodeUnavailable, "bad gateway: the store behind this server refuses its credentials; its operator must renew them")
	case errors.Is(err, kv.ErrUnavailable):
		ra, _ := kv.RetryAfter(err)
		e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable")
		e.retryAfter = ra
		return e
	case errors.Is(err, context.DeadlineExceeded):
		// The request's deadline (ServeConfig.WriteTimeout) or the store's
		// own passed: a write's outcome is unknown, and writes are
		// idempotent, so the client is told to retry.
		e := errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable: the store did not answer in time; a write may or may not have been applied, retry it")
		e.retryAfter = TimeoutRetryAfter
		return e
	case errors.Is(err, context.Canceled):
		return errorf(http.StatusServiceUnavailable, CodeUnavailable, "service temporarily unavailable: request cancelled")
	}
	return errorf(http.StatusInternalServerError, CodeUnavailable, "service temporarily unavailable")
}
