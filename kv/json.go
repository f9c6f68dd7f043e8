package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
)

// GetJSON reads key and decodes its JSON value into v. It reports found=false
// with a nil error when the key is missing or its value is not valid JSON for
// v ("no record"): one corrupt record must not crash the bot. A malformed
// value also logs one warning on slog's default logger naming the key's
// namespace, never the value. Other errors (an unavailable backend) are
// returned: they are not "no record". A nil store, or a v that is not a
// non-nil pointer, is ErrInvalidArgument before any I/O.
func GetJSON(ctx context.Context, s Store, key string, v any) (found bool, err error) {
	return GetJSONLogger(ctx, slog.Default(), s, key, v)
}

// GetJSONLogger is GetJSON with its warnings sent to logger.
func GetJSONLogger(ctx context.Context, logger *slog.Logger, s Store, key string, v any) (bool, error) {
	if s == nil {
		return false, fmt.Errorf("%w: GetJSON on a nil store", ErrInvalidArgument)
	}
	if rv := reflect.ValueOf(v); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false, fmt.Errorf("%w: GetJSON decodes into a non-nil pointer, not %T", ErrInvalidArgument, v)
	}
	raw, err := s.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		if logger != nil {
			logger.WarnContext(ctx, "kv: malformed JSON record treated as missing",
				slog.String("namespace", namespaceOf(s, key)),
				slog.Int("bytes", len(raw)),
				slog.String("reason", JSONReason(err)))
		}
		return false, nil
	}
	return true, nil
}

// PutJSON encodes v as JSON and stores it under key. Values JSON cannot encode
// (NaN, infinities, channels, functions, cycles) are refused with
// ErrInvalidJSON before any I/O.
func PutJSON(ctx context.Context, s Store, key string, v any, opts PutOptions) error {
	if s == nil {
		return fmt.Errorf("%w: PutJSON on a nil store", ErrInvalidArgument)
	}
	raw, err := EncodeJSON(v)
	if err != nil {
		return err
	}
	return s.Put(ctx, key, raw, opts)
}

// EncodeJSON encodes v as PutJSON does.
func EncodeJSON(v any) (raw []byte, err error) {
	defer func() {
		// encoding/json reports cycles as an error, but a value whose
		// MarshalJSON panics must not take the caller down either.
		if r := recover(); r != nil {
			raw, err = nil, fmt.Errorf("%w: encoder panicked", ErrInvalidJSON)
		}
	}()
	raw, err = json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidJSON, JSONReason(err))
	}
	return raw, nil
}

// JSONReason describes an encoding/json error by its kind only, for logs:
// the package's own messages can quote the offending value.
func JSONReason(err error) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		unsup  *json.UnsupportedTypeError
		unval  *json.UnsupportedValueError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return "JSON type " + typ.Value + " does not fit " + typ.Type.String()
	case errors.As(err, &unsup):
		return "unsupported type " + unsup.Type.String()
	case errors.As(err, &unval):
		return "unsupported value (NaN, infinity or a cycle)"
	}
	return "invalid JSON"
}

// namespaceOf names the namespace of key for logs: the module of a namespaced
// store, or the text before the first ":" of a raw key.
func namespaceOf(s Store, key string) string {
	if n, ok := s.(interface{ Module() string }); ok {
		return n.Module()
	}
	return ModuleOf(key)
}

// ModuleOf returns the module a raw key belongs to: the text before its first
// ":" when that is a valid module name, else "".
func ModuleOf(key string) string {
	if mod, _, ok := strings.Cut(key, ":"); ok && ValidateModule(mod) == nil {
		return mod
	}
	return ""
}
