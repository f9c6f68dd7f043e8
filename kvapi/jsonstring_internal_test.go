package kvapi

import (
	"encoding/json"
	"testing"
)

// FuzzJSONString: the bulk/get encoder writes valid JSON that decodes to
// what encoding/json would have written for the same value (invalid UTF-8
// as U+FFFD), and its length is measured exactly beforehand.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x00\x1f\"\\\n\r\t", "\xff\xfe", "日本語😀", "\u2028<>&", "a\xc3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		out := appendJSONString(nil, s)
		if len(out) != jsonStringLen(s) {
			t.Fatalf("measured %d, wrote %d", jsonStringLen(s), len(out))
		}
		var got, want string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: not a JSON string: %v", out, err)
		}
		ref, _ := json.Marshal(string(s))
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", s, got, want)
		}
	})
}
