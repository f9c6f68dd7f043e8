package kv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kv"
)

func TestUnavailable(t *testing.T) {
	cause := errors.New("connection refused")
	err := fmt.Errorf("get: %w", kv.Unavailable("mongodb", 0, cause))
	if !errors.Is(err, kv.ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("%v does not match ErrUnavailable and its cause", err)
	}
	if d, ok := kv.RetryAfter(err); !ok || d != kv.DefaultRetryAfter {
		t.Fatalf("RetryAfter = %v, %v; want the default", d, ok)
	}
	if d, ok := kv.RetryAfter(kv.Unavailable("cloudflare_kv", 30*time.Second, nil)); !ok || d != 30*time.Second {
		t.Fatalf("RetryAfter = %v, %v; want 30s", d, ok)
	}
	if _, ok := kv.RetryAfter(kv.ErrNotFound); ok {
		t.Fatal("ErrNotFound reported as unavailable")
	}
	if _, ok := kv.RetryAfter(fmt.Errorf("x: %w", kv.ErrUnavailable)); !ok {
		t.Fatal("bare ErrUnavailable has no retry hint")
	}
}

func TestPutOptionsExpiresAt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := (kv.PutOptions{TTL: 90*time.Second + 700*time.Millisecond}).ExpiresAt(now); !got.Equal(now.Add(90 * time.Second)) {
		t.Fatalf("TTL expiry = %v; want whole seconds", got)
	}
	exp := now.Add(time.Hour)
	if got := (kv.PutOptions{Expiration: exp}).ExpiresAt(now); !got.Equal(exp) {
		t.Fatalf("absolute expiry = %v", got)
	}
	if got := (kv.PutOptions{}).ExpiresAt(now); !got.IsZero() || (kv.PutOptions{}).HasExpiry() {
		t.Fatalf("no expiry = %v", got)
	}
}

func ExampleNamespace() {
	ctx := context.Background()
	store := newStore()
	wordle, err := kv.Namespace(store, "wordle")
	if err != nil {
		panic(err)
	}
	_ = kv.PutJSON(ctx, wordle, "games:42", map[string]string{"word": "apple"}, kv.PutOptions{TTL: time.Hour})
	var game struct{ Word string }
	found, _ := kv.GetJSON(ctx, wordle, "games:42", &game)
	page, _ := wordle.List(ctx, kv.ListOptions{Prefix: "games:"})
	raw, _ := store.List(ctx, kv.ListOptions{})
	fmt.Println(found, game.Word, page.Keys, raw.Keys)
	// Output: true apple [games:42] [wordle:games:42]
}
