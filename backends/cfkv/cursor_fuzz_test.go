package cfkv

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

// FuzzCursor: a cursor comes back from callers, so any string must decode
// to a sane position or to kv.ErrInvalidCursor, and what List encodes must
// decode to itself for its own prefix only.
func FuzzCursor(f *testing.F) {
	f.Add("k:", "k:001", 3, "api-cursor", "c1.AmtfBWs6MDAxA2FwaQ")
	f.Add("", "", 0, "x", "c1.")
	f.Add("é", "é\x00", 999, "", "k1.YQ")
	f.Fuzz(func(t *testing.T, prefix, last string, offset int, server, cursor string) {
		if pos, err := decodeCursor(cursor, prefix); err != nil {
			if !errors.Is(err, kv.ErrInvalidCursor) {
				t.Fatalf("decodeCursor(%q) = %v, not kv.ErrInvalidCursor", cursor, err)
			}
		} else if cursor != "" && (pos.offset < 0 || pos.offset >= kv.MaxListLimit || !strings.HasPrefix(pos.last, prefix) || (pos.last == "" && pos.server == "")) {
			t.Fatalf("decodeCursor(%q) = %+v: not a position List makes", cursor, pos)
		}

		want := listPosition{server: server, last: last, offset: offset}
		if offset < 0 || offset >= kv.MaxListLimit || (last == "" && server == "") ||
			(last != "" && (kv.ValidateKey(last) != nil || !strings.HasPrefix(last, prefix))) {
			return // not a position List makes
		}
		c := encodeCursor(prefix, want)
		got, err := decodeCursor(c, prefix)
		if err != nil || got != want {
			t.Fatalf("decodeCursor(encodeCursor(%+v)) = %+v, %v", want, got, err)
		}
		if _, err := decodeCursor(c, prefix+"x"); !errors.Is(err, kv.ErrInvalidCursor) {
			t.Fatalf("cursor for %q accepted for %q: %v", prefix, prefix+"x", err)
		}
	})
}
