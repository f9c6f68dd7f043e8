package compare

import (
	"context"
	"errors"

	"github.com/kvshadow/kvshadow/kv"
)

// ErrorClass names the class of a store error without its text, for records,
// metrics and span attributes.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, kv.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, kv.ErrNotFound):
		return "not_found"
	case errors.Is(err, kv.ErrClosed):
		return "closed"
	case errors.Is(err, kv.ErrPanicked):
		return "panic"
	case errors.Is(err, kv.ErrInvalidKey), errors.Is(err, kv.ErrInvalidValue),
		errors.Is(err, kv.ErrInvalidTTL), errors.Is(err, kv.ErrInvalidLimit),
		errors.Is(err, kv.ErrInvalidPrefix), errors.Is(err, kv.ErrInvalidCursor),
		errors.Is(err, kv.ErrInvalidNamespace), errors.Is(err, kv.ErrInvalidJSON),
		errors.Is(err, kv.ErrInvalidMetadata), errors.Is(err, kv.ErrMetadataUnsupported):
		return "invalid_input"
	}
	return "other"
}
