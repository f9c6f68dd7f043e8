package kv_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

func TestValidateMetadata(t *testing.T) {
	max := `"` + strings.Repeat("m", kv.MaxMetadataSize-2) + `"`
	for name, c := range map[string]struct {
		md   json.RawMessage
		want error
	}{
		"none":        {nil, nil},
		"object":      {json.RawMessage(`{"a":1}`), nil},
		"at limit":    {json.RawMessage(max), nil},
		"over limit":  {json.RawMessage(`["` + strings.Repeat("m", kv.MaxMetadataSize-3) + `"]`), kv.ErrInvalidMetadata},
		"spaces only": {json.RawMessage(" " + max + " "), nil},
		"not json":    {json.RawMessage(`{a:1}`), kv.ErrInvalidMetadata},
		"two values":  {json.RawMessage(`1 2`), kv.ErrInvalidMetadata},
		"empty bytes": {json.RawMessage{}, kv.ErrInvalidMetadata},
	} {
		if err := kv.ValidateMetadata(c.md); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: ValidateMetadata = %v, want %v", name, err, c.want)
		}
	}
}

// plainStore keeps no metadata.
type plainStore struct {
	kv.Store
	puts int
}

func (p *plainStore) Put(context.Context, string, []byte, kv.PutOptions) error { p.puts++; return nil }

func TestPutEntryRefusesMetadataAStoreWouldDrop(t *testing.T) {
	p := &plainStore{}
	err := kv.PutEntry(context.Background(), p, kv.Entry{Key: "k", Value: []byte("v"), Metadata: json.RawMessage(`{}`)})
	if !errors.Is(err, kv.ErrMetadataUnsupported) || !errors.Is(err, errors.ErrUnsupported) || p.puts != 0 {
		t.Fatalf("PutEntry(with metadata) on a plain store = %v after %d puts, want ErrMetadataUnsupported and no put", err, p.puts)
	}
	if err := kv.PutEntry(context.Background(), p, kv.Entry{Key: "k", Value: []byte("v")}); err != nil || p.puts != 1 {
		t.Fatalf("PutEntry(no metadata) = %v after %d puts, want one Put", err, p.puts)
	}
	if err := kv.PutEntry(context.Background(), nil, kv.Entry{Key: "k"}); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Fatalf("PutEntry(nil store) = %v, want ErrInvalidArgument", err)
	}
}

func TestNormalizeMetadata(t *testing.T) {
	for in, want := range map[string]string{
		"{ \"a\" : [1, 2] }\n": `{"a":[1,2]}`,
		"null":                 "",
		" null ":               "",
		`"x"`:                  `"x"`,
	} {
		got := kv.NormalizeMetadata(json.RawMessage(in))
		if string(got) != want || (want == "") != (got == nil) {
			t.Errorf("NormalizeMetadata(%q) = %q, want %q", in, got, want)
		}
	}
	if kv.NormalizeMetadata(nil) != nil {
		t.Error("NormalizeMetadata(nil) is not nil")
	}
	in := json.RawMessage(`{"a":1}`)
	if out := kv.NormalizeMetadata(in); &out[0] == &in[0] {
		t.Error("NormalizeMetadata shares the caller's buffer")
	}
}
