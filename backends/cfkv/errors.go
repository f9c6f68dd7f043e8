package cfkv

import (
	"bytes"
	"cmp"
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

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"

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

// Cloudflare's codes that the Store maps by name.
const (
	codeNotFound     = 10009 // the key does not exist
	codeNoNamespace  = 10013 // the namespace does not exist: an APIError, never kv.ErrNotFound
	codeUnauthorized = 10000 // the token is refused
)

// sentinels maps the API's Workers KV codes to the contract's errors.
var sentinels = map[int]error{
	codeNotFound: kv.ErrNotFound,
	10012:        kv.ErrInvalidValue,
	10024:        kv.ErrInvalidValue,
	10028:        kv.ErrInvalidLimit,
	10030:        kv.ErrInvalidKey,
	10033:        kv.ErrInvalidTTL,
	10034:        kv.ErrInvalidTTL,
	10041:        kv.ErrInvalidCursor,
	10042:        kv.ErrInvalidKey,
}

// outcome is the result of one try: done, or an error that may be retried.
type outcome struct {
	err        error
	retry      bool
	retryAfter time.Duration // the server's hint, 0 when it gave none
}

// errTryTimeout is the cause of a try's context that RequestTimeout ended;
// it matches context.DeadlineExceeded.
var errTryTimeout = fmt.Errorf("cfkv: the try's time is up: %w", context.DeadlineExceeded)

// outcomeOf classifies how one SDK call ended, in a try's context ctx:
// resp is the answer the SDK saw, if any.
func (s *Store) outcomeOf(ctx context.Context, op string, resp *http.Response, err error) outcome {
	if err == nil {
		return outcome{} // before the targets of errors.As, which live on the heap
	}
	var (
		sdkErr *cf.Error
		ours   *APIError
		bad    notEnvelope
	)
	switch {
	case errors.As(err, &sdkErr):
		var header http.Header
		if sdkErr.Response != nil {
			header = sdkErr.Response.Header
		}
		code, msg := 0, ""
		if len(sdkErr.Errors) > 0 {
			code, msg = int(sdkErr.Errors[0].Code), sdkErr.Errors[0].Message
		}
		return s.refusal(op, sdkErr.StatusCode, header, code, msg)
	case errors.As(err, &ours):
		return outcome{err: err}
	case errors.As(err, &bad):
		return outcome{err: &APIError{Op: op, Status: int(bad), Message: "the response is not a Cloudflare API envelope"}}
	case ctx.Err() == nil && resp != nil && resp.StatusCode >= 400:
		// A refusal whose body is no envelope (a proxy's HTML 502, an
		// edge's plain 413): the SDK fails to decode it and returns that
		// failure, untyped; the status still says what happened.
		return s.refusal(op, resp.StatusCode, resp.Header, 0, "")
	}
	return s.transportFailure(ctx, op, err)
}

// refusal classifies an HTTP answer that is not a success: its status,
// and the code and message of the first of its envelope's errors.
func (s *Store) refusal(op string, status int, header http.Header, code int, msg string) outcome {
	// scrub: a proxy could echo request headers back.
	e := &APIError{Op: op, Status: status, Code: code, Message: cmp.Or(s.scrub(msg), http.StatusText(status))}
	switch {
	case code == codeNotFound && (status == http.StatusNotFound || status < 300):
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
	case status == http.StatusUnauthorized || status == http.StatusForbidden || code == codeUnauthorized:
		e.kind = kv.ErrAccessDenied
	default: // 4xx, or 2xx with success:false
		e.kind = sentinels[code]
	}
	return outcome{err: e}
}

// notEnvelope is checkEnvelope's error for a 2xx answer, of this status,
// that is no Cloudflare envelope.
type notEnvelope int

func (e notEnvelope) Error() string {
	return fmt.Sprintf("HTTP %d: the response is not a Cloudflare API envelope", int(e))
}

// checkEnvelope is the SDK middleware of the calls whose answer the SDK
// decodes: it checks a 2xx answer's success (the package doc says why) and
// hands the body on for the SDK to decode as usual.
func checkEnvelope(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	body, err := readEnvelope(resp)
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// readEnvelope reads and closes a 2xx answer, which must be a Cloudflare
// envelope that says success (envelopeRefusal).
func readEnvelope(resp *http.Response) ([]byte, error) {
	body, err := readBody(resp, maxEnvelope)
	if err == nil {
		err = envelopeRefusal(resp, body)
	}
	if err != nil {
		return nil, err
	}
	return body, nil
}

// envelopeRefusal reads body, resp's answer, as an envelope: success:false
// becomes the SDK's own typed error, decoded by the SDK, with the answer's
// status, and a body that is no envelope notEnvelope.
func envelopeRefusal(resp *http.Response, body []byte) error {
	var env struct {
		Success *bool `json:"success"`
	}
	switch {
	case json.Unmarshal(body, &env) != nil || env.Success == nil:
		return notEnvelope(resp.StatusCode)
	case !*env.Success:
		refused := &cf.Error{StatusCode: resp.StatusCode, Request: resp.Request, Response: resp}
		if err := refused.UnmarshalJSON(body); err != nil {
			return notEnvelope(resp.StatusCode)
		}
		return refused
	}
	return nil
}

// errAnswerTooLarge marks an answer the HTTP client's transport refused to
// read whole, as too large for it (membudget's Transport): GetMany then
// reads the keys in smaller pieces, down to one alone.
var errAnswerTooLarge = errors.New("the answer is too large for this client to read whole")

// transportFailure classifies an error that came before any HTTP answer, or
// in the middle of one, in a try's context ctx. A cancelled caller gets its
// context's error back; anything else (a refused connection, a reset, a try
// cut off by RequestTimeout) is retried and ends as unavailable. The URL is
// stripped from the cause: its path holds the key.
func (s *Store) transportFailure(ctx context.Context, op string, err error) outcome {
	if context.Cause(ctx) == errTryTimeout {
		return outcome{err: fmt.Errorf("cfkv: %s: no answer within %s", op, s.cfg.RequestTimeout), retry: true}
	}
	if ctx.Err() != nil { // the caller's
		return outcome{err: fmt.Errorf("cfkv: %s: %w", op, ctx.Err())}
	}
	if errors.Is(err, kv.ErrTooLarge) {
		// The client's transport could never hold the answer (a memory
		// budget): asking again cannot help, asking for less can.
		return outcome{err: fmt.Errorf("cfkv: %s: %w: %w", op, errAnswerTooLarge, err)}
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

// The most this package reads of a value's answer and of an envelope.
const maxEnvelope = 1 << 30

// readBody reads at most limit bytes of a response body, and closes it.
// A body of a declared length up to preallocated (net/http ends it there,
// with io.EOF on its last bytes, which frees the connection) is read into
// one slice of that length, not grown from io.ReadAll's 512 bytes.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if n := resp.ContentLength; n >= 0 && n <= min(limit, preallocated) {
		body := make([]byte, n)
		_, err := io.ReadFull(resp.Body, body)
		return body, err
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}

// preallocated is the most readBody allocates on a declared length alone,
// before the bytes came.
const preallocated = 1 << 20
