package kv_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// Mistakes of the calling code are typed errors, not panics, and reach no
// store.
func TestJSONHelpersRefuseBadArguments(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Config{})
	if err := s.Put(ctx, "wordle:k", []byte(`{"a":1}`), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var m map[string]int
	var nilMap *map[string]int
	for name, call := range map[string]func() error{
		"GetJSON nil store":   func() error { _, err := kv.GetJSON(ctx, nil, "wordle:k", &m); return err },
		"PutJSON nil store":   func() error { return kv.PutJSON(ctx, nil, "wordle:k", 1, kv.PutOptions{}) },
		"GetJSON nil target":  func() error { _, err := kv.GetJSON(ctx, s, "wordle:k", nil); return err },
		"GetJSON non-pointer": func() error { _, err := kv.GetJSON(ctx, s, "wordle:k", m); return err },
		"GetJSON nil pointer": func() error { _, err := kv.GetJSON(ctx, s, "wordle:k", nilMap); return err },
	} {
		if err := call(); !errors.Is(err, kv.ErrInvalidArgument) {
			t.Errorf("%s = %v, want kv.ErrInvalidArgument", name, err)
		}
	}
	if found, err := kv.GetJSON(ctx, s, "wordle:k", &m); !found || err != nil || m["a"] != 1 {
		t.Fatalf("GetJSON = %v, %v, %v", found, err, m)
	}
}
