package kv

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// cursorTag marks cursors made by EncodeCursor, so that a cursor from another
// kind of store is refused rather than misread.
const cursorTag = "k1."

// EncodeCursor makes the opaque cursor of a listing that stopped after
// lastKey. Stores that list in key order (memory, MongoDB) use it; the cursor
// resumes strictly after lastKey.
func EncodeCursor(lastKey string) string {
	return cursorTag + base64.RawURLEncoding.EncodeToString([]byte(lastKey))
}

// DecodeCursor returns the key a cursor resumes after. An empty cursor
// returns "" (start at the beginning). A cursor that was not made by
// EncodeCursor, or whose key is not a valid key under prefix, is refused with
// ErrInvalidCursor: a cursor cannot move a listing outside its prefix.
func DecodeCursor(cursor, prefix string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	enc, ok := strings.CutPrefix(cursor, cursorTag)
	if !ok {
		return "", fmt.Errorf("%w: not issued by this store", ErrInvalidCursor)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	last := string(raw)
	if ValidateKey(last) != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	if !strings.HasPrefix(last, prefix) {
		return "", fmt.Errorf("%w: issued for another prefix", ErrInvalidCursor)
	}
	return last, nil
}
