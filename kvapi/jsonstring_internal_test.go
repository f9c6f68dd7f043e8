package kvapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzJSONString: the bulk/get encoder writes valid JSON that decodes to
// what encoding/json would have written for the same value (invalid UTF-8
// as U+FFFD).
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x00\x1f\"\\\n\r\t", "\xff\xfe", "日本語😀", "\u2028<>&", "a\xc3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		var buf bytes.Buffer
		w := bufio.NewWriterSize(&buf, 16) // small, so that the pieces cross its flushes
		writeJSONString(w, s)
		_ = w.Flush()
		out := buf.Bytes()
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
