package kv

import (
	"errors"
	"fmt"
	"time"
)

// The errors every Store reports. Backends wrap them with %w and a message
// that names the problem; callers test them with errors.Is.
var (
	// ErrNotFound: the key is missing or has expired.
	ErrNotFound = errors.New("kv: key not found")
	// ErrInvalidKey: the key breaks the key rules (see package doc).
	ErrInvalidKey = errors.New("kv: invalid key")
	// ErrInvalidValue: the value is larger than MaxValueSize.
	ErrInvalidValue = errors.New("kv: invalid value")
	// ErrInvalidTTL: the expiry is too close, too far, negative, or both a
	// TTL and an absolute expiration were given.
	ErrInvalidTTL = errors.New("kv: invalid expiry")
	// ErrInvalidMetadata: metadata that is not one JSON value or is larger
	// than MaxMetadataSize.
	ErrInvalidMetadata = errors.New("kv: invalid metadata")
	// ErrInvalidLimit: a list limit outside 0..MaxListLimit.
	ErrInvalidLimit = errors.New("kv: invalid list limit")
	// ErrInvalidPrefix: a list prefix that is not valid UTF-8 or is longer
	// than a key may be.
	ErrInvalidPrefix = errors.New("kv: invalid list prefix")
	// ErrInvalidCursor: a cursor that this store and prefix did not issue.
	ErrInvalidCursor = errors.New("kv: invalid list cursor")
	// ErrInvalidNamespace: a module name that does not match ^[a-z0-9_-]+$.
	ErrInvalidNamespace = errors.New("kv: invalid namespace")
	// ErrInvalidJSON: PutJSON was given a value JSON cannot encode (NaN,
	// infinities, channels, functions, cycles).
	ErrInvalidJSON = errors.New("kv: value cannot be encoded as JSON")
	// ErrUnavailable: the backend cannot be reached or refuses service for
	// now. The error is an *UnavailableError that says when to retry.
	ErrUnavailable = errors.New("kv: backend unavailable")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("kv: store closed")
	// ErrInvalidArgument: a mistake of the calling code that no store
	// call can fix: a nil store, a decode target that is not a non-nil
	// pointer.
	ErrInvalidArgument = errors.New("kv: invalid argument")
	// ErrPanicked: a store call panicked, and a wrapper that must not let
	// a panic through (the dual-write store) recovered it and returned this
	// instead.
	ErrPanicked = errors.New("kv: store panicked")
	// ErrTooLarge: a bulk read whose answer would pass the store's limit
	// on one reply (Workers KV: 25 MiB of values and metadata, HTTP 413
	// with code 10024). Fewer keys a call fix it; ReadSplit does that.
	ErrTooLarge = errors.New("kv: answer too large for one reply")
	// ErrAccessDenied: the backend refuses this client's credentials or
	// their rights (Workers KV: HTTP 401 or 403, a token revoked or without
	// Workers KV Storage). No retry mends it; the operator must.
	ErrAccessDenied = errors.New("kv: the backend refuses this client's credentials")
)

// DefaultRetryAfter is the retry hint of an UnavailableError whose backend
// gave none.
const DefaultRetryAfter = 5 * time.Second

// UnavailableError reports a backend that cannot serve now, with the delay
// after which a retry may succeed, so that an HTTP front can answer 503 with
// Retry-After. It matches ErrUnavailable.
type UnavailableError struct {
	// Backend names the store ("cloudflare_kv", "mongodb", ...).
	Backend string
	// RetryAfter is the suggested delay before retrying; never negative.
	RetryAfter time.Duration
	// Err is the underlying cause; it must not carry secrets.
	Err error
}

// Unavailable returns an *UnavailableError, using DefaultRetryAfter when
// retryAfter is not positive.
func Unavailable(backend string, retryAfter time.Duration, err error) *UnavailableError {
	if retryAfter <= 0 {
		retryAfter = DefaultRetryAfter
	}
	return &UnavailableError{Backend: backend, RetryAfter: retryAfter, Err: err}
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("kv: %s unavailable (retry after %s)", e.Backend, e.RetryAfter)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// RetryAfter returns the retry hint carried by err, and whether err is an
// unavailability at all.
func RetryAfter(err error) (time.Duration, bool) {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue.RetryAfter, true
	}
	if errors.Is(err, ErrUnavailable) {
		return DefaultRetryAfter, true
	}
	return 0, false
}
