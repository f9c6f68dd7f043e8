package memory_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

func TestConformance(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	kvtest.Run(t, kvtest.Harness{
		New:       func(*testing.T) kv.Store { return memory.New(memory.Config{Clock: clk}) },
		Advance:   clk.Advance,
		Now:       clk.Now,
		ListsInfo: true,
	})
}

// TestMetadata: the store keeps metadata with the value through PutEntry
// and PutMany, returns it from GetEntry and GetMany, clears it on Put, and
// refuses metadata the contract refuses; what it returns is its own copy.
func TestMetadata(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	s := memory.New(memory.Config{Clock: clk})
	md := json.RawMessage(`{"module":"wordle","n":1}`)
	exp := clk.Now().Add(time.Hour)
	if err := s.PutEntry(ctx, kv.Entry{Key: "a", Value: []byte("1"), Expiration: exp, Metadata: md}); err != nil {
		t.Fatal(err)
	}
	e, err := s.GetEntry(ctx, "a")
	if err != nil || string(e.Value) != "1" || !e.Expiration.Equal(exp) || string(e.Metadata) != string(md) {
		t.Fatalf("GetEntry = %+v, %v", e, err)
	}
	e.Metadata[0] = 'X'
	if again, _ := s.GetEntry(ctx, "a"); string(again.Metadata) != string(md) {
		t.Fatalf("a caller's edit reached the store: %s", again.Metadata)
	}
	if err := s.PutMany(ctx, []kv.Entry{{Key: "b", Value: []byte("2"), Metadata: json.RawMessage(`"tag"`)}, {Key: "c", Value: []byte("3")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMany(ctx, []string{"a", "b", "c"})
	if err != nil || len(got) != 3 {
		t.Fatalf("GetMany = %+v, %v", got, err)
	}
	want := map[string]string{"a": string(md), "b": `"tag"`, "c": ""}
	for _, e := range got {
		if string(e.Metadata) != want[e.Key] {
			t.Fatalf("GetMany %s metadata %q, want %q", e.Key, e.Metadata, want[e.Key])
		}
	}
	if err := s.Put(ctx, "a", []byte("new"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.GetEntry(ctx, "a"); e.Metadata != nil {
		t.Fatalf("Put kept metadata %s", e.Metadata)
	}
	big := json.RawMessage(`"` + strings.Repeat("m", kv.MaxMetadataSize) + `"`)
	for name, bad := range map[string]json.RawMessage{"too large": big, "not JSON": json.RawMessage(`{x`)} {
		if err := s.PutEntry(ctx, kv.Entry{Key: "d", Value: []byte("v"), Metadata: bad}); !errors.Is(err, kv.ErrInvalidMetadata) {
			t.Errorf("PutEntry with metadata %s = %v, want ErrInvalidMetadata", name, err)
		}
		if err := s.PutMany(ctx, []kv.Entry{{Key: "d", Value: []byte("v"), Metadata: bad}}); !errors.Is(err, kv.ErrInvalidMetadata) {
			t.Errorf("PutMany with metadata %s = %v, want ErrInvalidMetadata", name, err)
		}
	}
	if _, err := s.Get(ctx, "d"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("a refused entry was stored")
	}
	if err := kv.PutEntry(ctx, s, kv.Entry{Key: "e", Value: []byte("v"), Metadata: md}); err != nil {
		t.Fatalf("kv.PutEntry through the ability: %v", err)
	}
}
