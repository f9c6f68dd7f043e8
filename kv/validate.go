package kv

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// The limits of the contract, Workers KV's own.
const (
	MaxKeySize       = 512
	MaxValueSize     = 25 << 20
	MinTTL           = 60 * time.Second
	MaxTTL           = 100 * 365 * 24 * time.Hour
	DefaultListLimit = 1000
	MaxListLimit     = 1000
)

// ValidateKey checks key against the key rules.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: key is empty", ErrInvalidKey)
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: key is %d bytes, the limit is %d", ErrInvalidKey, len(key), MaxKeySize)
	case key == "." || key == "..":
		return fmt.Errorf("%w: key %q is reserved", ErrInvalidKey, key)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalidKey)
	}
	return nil
}

// ValidateKeys checks every key of a bulk call.
func ValidateKeys(keys []string) error {
	for i, k := range keys {
		if err := ValidateKey(k); err != nil {
			return fmt.Errorf("key %d: %w", i, err)
		}
	}
	return nil
}

// ValidateValue checks a value's size.
func ValidateValue(value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: value is %d bytes, the limit is %d", ErrInvalidValue, len(value), MaxValueSize)
	}
	return nil
}

// ValidatePutOptions checks the expiry of a Put made at now.
func ValidatePutOptions(opts PutOptions, now time.Time) error {
	if opts.TTL != 0 && !opts.Expiration.IsZero() {
		return fmt.Errorf("%w: set a TTL or an expiration, not both", ErrInvalidTTL)
	}
	if opts.TTL != 0 {
		return validateTTL(opts.TTL)
	}
	if !opts.Expiration.IsZero() {
		return ValidateExpiration(opts.Expiration, now)
	}
	return nil
}

// ValidateExpiration checks an absolute expiry against now.
func ValidateExpiration(exp, now time.Time) error {
	if err := validateTTL(exp.Sub(now)); err != nil {
		return fmt.Errorf("expiration %s: %w", exp.UTC().Format(time.RFC3339), err)
	}
	return nil
}

func validateTTL(ttl time.Duration) error {
	switch {
	case ttl < 0:
		return fmt.Errorf("%w: TTL %s is negative (in the past)", ErrInvalidTTL, ttl)
	case ttl < MinTTL:
		return fmt.Errorf("%w: TTL %s is shorter than the minimum %s", ErrInvalidTTL, ttl, MinTTL)
	case ttl > MaxTTL:
		return fmt.Errorf("%w: TTL %s is absurdly long (the maximum is %s, about 100 years)", ErrInvalidTTL, ttl, MaxTTL)
	}
	return nil
}

// ValidatePut checks all the inputs of a Put made at now.
func ValidatePut(key string, value []byte, opts PutOptions, now time.Time) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidateValue(value); err != nil {
		return err
	}
	return ValidatePutOptions(opts, now)
}

// ValidateEntries checks every entry of a bulk Put made at now.
func ValidateEntries(entries []Entry, now time.Time) error {
	for i, e := range entries {
		if err := ValidateEntry(e, now); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// ValidateListOptions checks a List's inputs and returns the effective limit.
// The cursor is the backend's to decode; DecodeCursor checks cursors made
// with EncodeCursor.
func ValidateListOptions(opts ListOptions) (limit int, err error) {
	switch {
	case opts.Limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", ErrInvalidLimit, opts.Limit)
	case opts.Limit > MaxListLimit:
		return 0, fmt.Errorf("%w: limit %d exceeds the maximum %d", ErrInvalidLimit, opts.Limit, MaxListLimit)
	case len(opts.Prefix) > MaxKeySize:
		return 0, fmt.Errorf("%w: prefix is %d bytes, longer than any key (%d)", ErrInvalidPrefix, len(opts.Prefix), MaxKeySize)
	case !utf8.ValidString(opts.Prefix):
		return 0, fmt.Errorf("%w: prefix is not valid UTF-8", ErrInvalidPrefix)
	case opts.Limit == 0:
		return DefaultListLimit, nil
	}
	return opts.Limit, nil
}

// IDForm is what an account or namespace ID may be, as the errors that
// refuse one quote it: Cloudflare's IDs are 32 hex digits, and the emulator
// takes readable names too. The rule keeps an ID from changing the shape of
// a request path.
const IDForm = `^[A-Za-z0-9_-]{1,64}$`

// IsID reports whether id matches IDForm. It is a loop, not a regular
// expression: a proxy checks the IDs of every request, and a regexp's
// machinery runs cold in a process that sleeps between requests.
func IsID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
