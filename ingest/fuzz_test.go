package ingest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/ingest"
	"github.com/kvshadow/kvshadow/kv"
)

// FuzzDecode: any body is a batch that keeps every rule, or a typed error.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"namespace":"ns","copies":[{"key":"k","value":"dg==","expiration":1796000100,"metadata":{"a":1},"acked_at":1796000000000}]}`))
	f.Add([]byte(`{"reads":[{"key":"k","found":true,"sha256":"` + string(bytes.Repeat([]byte("ab"), 32)) + `","length":1,"read_at":1796000000000}]}`))
	f.Add([]byte(`{"copies":[{"key":"k","deleted":true,"acked_at":1}]} `))
	f.Add([]byte(`{"copies":[{"key":"\u005f_kvshadow:stage","deleted":true,"acked_at":1}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := ingest.Decode(bytes.NewReader(body), ingest.Config{MaxBodyBytes: 1 << 16}, start)
		if err != nil {
			if !errors.Is(err, ingest.ErrInvalidBatch) && !errors.Is(err, ingest.ErrTooLarge) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, c := range b.Copies {
			if kv.ValidateKey(c.Key) != nil || strings.HasPrefix(c.Key, kv.ReservedPrefix) || len(c.Value) > kv.MaxValueSize || c.AckedAt.IsZero() || (c.Deleted && c.Value != nil) || (!c.Deleted && c.Value == nil) {
				t.Fatalf("accepted a copy that breaks a rule: %+v", c)
			}
			if c.Metadata != nil && kv.ValidateMetadata(c.Metadata) != nil {
				t.Fatalf("accepted bad metadata")
			}
		}
		for _, r := range b.Reads {
			if kv.ValidateKey(r.Key) != nil || strings.HasPrefix(r.Key, kv.ReservedPrefix) || r.ReadAt.IsZero() || r.Length < 0 {
				t.Fatalf("accepted a read that breaks a rule: %+v", r)
			}
		}
	})
}
