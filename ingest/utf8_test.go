package ingest_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/kvshadow/kvshadow/ingest"
)

// Keys that are not valid UTF-8, as raw bytes or as a lone surrogate
// escape (what a JavaScript string can hold), are refused with 400 and
// counted, instead of becoming U+FFFD and colliding with each other; a
// surrogate pair and a real U+FFFD are keys like any other.
func TestKeysMustBeUTF8(t *testing.T) {
	rec := &readRecorder{}
	h := newHandler(t, rec, nil)
	copyOf := func(key string) string {
		return fmt.Sprintf(`{"copies":[{"key":"%s","value":"dg==","acked_at":%d}]}`, key, ms)
	}
	readOf := func(key string) string {
		return fmt.Sprintf(`{"reads":[{"key":"%s","found":false,"read_at":%d}]}`, key, ms)
	}
	for name, key := range map[string]string{
		"raw byte":             "wordle:\xff",
		"lone high":            `wordle:\ud800x`,
		"lone low":             `wordle:\udc00`,
		"high at the end":      `wordle:\uD83D`,
		"high, then not a low": `wordle:\ud83d\u0041`,
	} {
		for kind, body := range map[string]string{"copy": copyOf(key), "read": readOf(key)} {
			if w := post(t, h, body); w.Code != http.StatusBadRequest || errorCode(t, w) != "invalid_key" {
				t.Errorf("%s in a %s: %d %s", name, kind, w.Code, w.Body)
			}
		}
	}
	if n := h.Refused()["invalid_key"]; n != 10 {
		t.Errorf("refused %v, want 10 invalid_key", h.Refused())
	}
	if rec.calls != 0 {
		t.Fatalf("the sink got %d batches of invalid keys", rec.calls)
	}
	for _, key := range []string{`wordle:\ud83d\ude00`, "wordle:\uFFFD", `wordle:\ufffd`, `wordle:\\ud800`} {
		if w := post(t, h, copyOf(key)); w.Code != http.StatusOK {
			t.Errorf("%s: %d %s", key, w.Code, w.Body)
		}
	}
	want := []string{"wordle:😀", "wordle:\uFFFD", "wordle:\uFFFD", `wordle:\ud800`}
	for i, c := range rec.copies {
		if c.Key != want[i] {
			t.Errorf("copy %d: key %q, want %q", i, c.Key, want[i])
		}
	}
	var _ ingest.Sink = rec
}
