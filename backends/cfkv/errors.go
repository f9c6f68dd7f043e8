package cfkv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

// backendName is the Backend of this package's kv.UnavailableError.
const backendName = "cloudflare_kv"

// APIError is a refusal by the Workers KV API. When the refusal is one the
// kv contract names (a bad key, TTL, limit or cursor), Unwrap returns that
// sentinel, so errors.Is(err, kv.ErrInvalidKey) holds.
type APIError struct {
	// Op is the store operation ("get", "put", "list", ...).
	Op string
	// Status is the HTTP status; 200 when the API said success:false.
	Status int
	// Code and Message are the first entry of the envelope's errors.
	Code    int
	Message string

	kind error
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("cfkv: %s: HTTP %d", e.Op, e.Status)
	if e.Code != 0 {
		s += fmt.Sprintf(", code %d", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *APIError) Unwrap() error { return e.kind }

// envelope is Cloudflare's response body, parsed by hand: the SDK's typed
// results drop success:false and lose bulk-get values.
type envelope struct {
	Success *bool `json:"success"`
	Errors  []struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
	Result     json.RawMessage `json:"result"`
	ResultInfo struct {
		Count  int    `json:"count"`
		Cursor string `json:"cursor"`
	} `json:"result_info"`
}

// sentinels maps the API's Workers KV codes to the contract's errors.
var sentinels = map[int]error{
	10009: kv.ErrNotFound,
	10012: kv.ErrInvalidValue,
	10024: kv.ErrInvalidValue,
	10028: kv.ErrInvalidLimit,
	10030: kv.ErrInvalidKey,
	10033: kv.ErrInvalidTTL,
	10034: kv.ErrInvalidTTL,
	10041: kv.ErrInvalidCursor,
	10042: kv.ErrInvalidKey,
}

// outcome is the result of one try: done, or an error that may be retried.
type outcome struct {
	err        error
	retry      bool
	retryAfter time.Duration // the server's hint, 0 when it gave none
}

// refusal classifies an HTTP answer that is not a success. body is the
// response body, which Cloudflare fills with an envelope.
func (s *Store) refusal(op string, status int, header http.Header, body []byte) outcome {
	e := &APIError{Op: op, Status: status}
	var env envelope
	if json.Unmarshal(body, &env) == nil && len(env.Errors) > 0 {
		// scrub: a proxy could echo request headers back.
		e.Code, e.Message = env.Errors[0].Code, s.scrub(env.Errors[0].Message)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	switch {
	case e.Code == 10009 && (status == http.StatusNotFound || status < 300):
		return outcome{err: kv.ErrNotFound}
	case status == http.StatusTooManyRequests || status >= 500:
		return outcome{err: e, retry: true, retryAfter: s.retryAfter(header)}
	case status == http.StatusRequestEntityTooLarge && op == opBulkGet:
		// The request was fine; its answer passes the API's 25 MiB.
		e.kind = kv.ErrTooLarge
	case status == http.StatusRequestEntityTooLarge:
		e.kind = kv.ErrInvalidValue
	case status == http.StatusRequestURITooLong:
		e.kind = kv.ErrInvalidKey
	default: // 4xx, or 2xx with success:false
		e.kind = sentinels[e.Code]
	}
	return outcome{err: e}
}

// decodeEnvelope parses a 2xx body and refuses success:false.
func (s *Store) decodeEnvelope(op string, status int, header http.Header, body []byte) (envelope, outcome) {
	var env envelope
	err := json.Unmarshal(body, &env)
	return env, s.succeeded(op, status, header, body, err, env.Success)
}

// succeeded judges a 2xx body by its envelope's success, as decoded (err
// is the decoding's): none is not an envelope, false a refusal.
func (s *Store) succeeded(op string, status int, header http.Header, body []byte, err error, success *bool) outcome {
	if err != nil || success == nil {
		return outcome{err: &APIError{Op: op, Status: status, Message: "the response is not a Cloudflare API envelope"}}
	}
	if !*success {
		return s.refusal(op, status, header, body)
	}
	return outcome{}
}

// transportFailure classifies an error that came before any HTTP answer, or
// in the middle of one, in a try's context ctx. A cancelled caller gets its
// context's error back; anything else (a refused connection, a reset, a try
// cut off by RequestTimeout) is retried and ends as unavailable. The URL is
// stripped from the cause: its path holds the key.
// errAnswerTooLarge marks an answer the HTTP client's transport refused to
// read whole, as too large for it (membudget's Transport): GetMany then
// reads the keys in smaller pieces, down to one alone.
var errAnswerTooLarge = errors.New("the answer is too large for this client to read whole")

func (s *Store) transportFailure(ctx context.Context, op string, err error) outcome {
	if callerErr := callerErr(ctx); callerErr != nil {
		return outcome{err: fmt.Errorf("cfkv: %s: %w", op, callerErr)}
	}
	if errors.Is(err, kv.ErrTooLarge) {
		// The client's transport could never hold the answer (a memory
		// budget): asking again cannot help, asking for less can.
		return outcome{err: fmt.Errorf("cfkv: %s: %w: %w", op, errAnswerTooLarge, err)}
	}
	if errors.Is(err, context.DeadlineExceeded) || context.Cause(ctx) == errTryTimeout {
		return outcome{err: fmt.Errorf("cfkv: %s: no answer within %s", op, s.cfg.RequestTimeout), retry: true}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return outcome{err: fmt.Errorf("cfkv: %s: %w", op, err), retry: true}
}

// retryAfter reads Retry-After, in seconds or as an HTTP date.
func (s *Store) retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(s.cfg.Clock.Now()), 0)
	}
	return 0
}

// readBody reads and closes a response body.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if n := resp.ContentLength; n >= 0 && n <= limit {
		// A declared length is all net/http's body yields: read into one
		// slice of that size, with no buffer growing past it.
		body := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, limit))
	return buf.Bytes(), err
}
