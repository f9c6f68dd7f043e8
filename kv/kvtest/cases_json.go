package kvtest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

type game struct {
	Word    string         `json:"word"`
	Guesses []string       `json:"guesses"`
	Score   *int           `json:"score"`
	Meta    map[string]any `json:"meta"`
}

func testJSON(t *testing.T, h Harness) {
	s := h.New(t)
	score := 3
	in := game{Word: "apple", Guesses: []string{"crane", "日本"}, Score: &score, Meta: map[string]any{"nested": []any{1.5, nil, true}}}
	if err := kv.PutJSON(ctx(t), s, "wordle:games:42", in, kv.PutOptions{}); err != nil {
		t.Fatalf("PutJSON: %v", err)
	}
	var out game
	found, err := kv.GetJSON(ctx(t), s, "wordle:games:42", &out)
	if err != nil || !found {
		t.Fatalf("GetJSON = %v, %v; want found", found, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("GetJSON = %+v, want %+v", out, in)
	}
	// Stored as plain JSON text, as the JavaScript bot's putJSON does.
	wantValue(t, s, "wordle:games:42", []byte(`{"word":"apple","guesses":["crane","日本"],"score":3,"meta":{"nested":[1.5,null,true]}}`))

	for name, v := range map[string]any{"null": nil, "array": []int{1, 2}, "string": "s", "number": 1.25} {
		if err := kv.PutJSON(ctx(t), s, "json:"+name, v, kv.PutOptions{}); err != nil {
			t.Fatalf("PutJSON(%s): %v", name, err)
		}
		var got any
		if found, err := kv.GetJSON(ctx(t), s, "json:"+name, &got); err != nil || !found {
			t.Fatalf("GetJSON(%s) = %v, %v", name, found, err)
		}
	}

	var missing game
	if found, err := kv.GetJSON(ctx(t), s, "json:missing", &missing); found || err != nil {
		t.Fatalf("GetJSON(missing) = %v, %v; want no record", found, err)
	}

	type cyclic struct{ Next *cyclic }
	loop := &cyclic{}
	loop.Next = loop
	for name, v := range map[string]any{
		"NaN":      math.NaN(),
		"+Inf":     math.Inf(1),
		"-Inf":     map[string]float64{"x": math.Inf(-1)},
		"channel":  make(chan int),
		"function": func() {},
		"cycle":    loop,
		"complex":  complex(1, 2),
	} {
		err := kv.PutJSON(ctx(t), s, "json:bad", v, kv.PutOptions{})
		if !errors.Is(err, kv.ErrInvalidJSON) {
			t.Fatalf("PutJSON(%s) = %v, want kv.ErrInvalidJSON", name, err)
		}
	}
	wantMissing(t, s, "json:bad")
}

// captured is a slog handler that keeps every record's text.
type captured struct {
	mu   sync.Mutex
	recs []string
}

func (c *captured) Enabled(context.Context, slog.Level) bool { return true }
func (c *captured) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	c.mu.Lock()
	c.recs = append(c.recs, b.String())
	c.mu.Unlock()
	return nil
}
func (c *captured) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captured) WithGroup(string) slog.Handler      { return c }

func testMalformedJSON(t *testing.T, h Harness) {
	s := h.New(t)
	const secret = `{"token":"SECRET-VALUE-MARKER"`
	mustPut(t, s, "wordle:games:7", []byte(secret), kv.PutOptions{})
	logs := &captured{}
	var out game
	found, err := kv.GetJSONLogger(ctx(t), slog.New(logs), s, "wordle:games:7", &out)
	if found || err != nil {
		t.Fatalf("GetJSON(malformed) = %v, %v; want no record and no error", found, err)
	}
	if len(logs.recs) != 1 {
		t.Fatalf("GetJSON(malformed) logged %d records, want 1: %q", len(logs.recs), logs.recs)
	}
	rec := logs.recs[0]
	if !strings.HasPrefix(rec, "WARN") || !strings.Contains(rec, "namespace=wordle") {
		t.Fatalf("warning %q: want level WARN and namespace=wordle", rec)
	}
	if strings.Contains(rec, "SECRET-VALUE-MARKER") || strings.Contains(rec, "games:7") {
		t.Fatalf("warning %q leaks the value or the key", rec)
	}
	// A value of the wrong JSON type for the target is "no record" too.
	mustPut(t, s, "wordle:games:8", []byte(`[1,2]`), kv.PutOptions{})
	if found, err := kv.GetJSONLogger(ctx(t), slog.New(logs), s, "wordle:games:8", &out); found || err != nil {
		t.Fatalf("GetJSON(wrong type) = %v, %v; want no record", found, err)
	}
}
