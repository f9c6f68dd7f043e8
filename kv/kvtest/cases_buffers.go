package kvtest

import (
	"encoding/json"
	"testing"

	"github.com/kvshadow/kvshadow/kv"
)

// testCallerBuffers checks that the bytes passed in and returned are the
// caller's: a store keeps none of a write's buffers once it returns, and
// changing what a read returned changes nothing stored.
func testCallerBuffers(t *testing.T, h Harness) {
	s := h.New(t)
	scribble := func(b []byte) {
		for i := range b {
			b[i] = 'x'
		}
	}
	buf := []byte("first value")
	mustPut(t, s, "buf:put", buf, kv.PutOptions{})
	scribble(buf)
	wantValue(t, s, "buf:put", []byte("first value"))

	got, err := s.Get(ctx(t), "buf:put")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	scribble(got)
	wantValue(t, s, "buf:put", []byte("first value"))

	if ms, ok := s.(kv.MetadataStore); ok {
		md := json.RawMessage(`{"owner":"bot"}`)
		val := []byte("entry value")
		if err := ms.PutEntry(ctx(t), kv.Entry{Key: "buf:entry", Value: val, Metadata: md}); err != nil {
			t.Fatalf("PutEntry: %v", err)
		}
		scribble(val)
		scribble(md[1 : len(md)-1])
		e, err := ms.GetEntry(ctx(t), "buf:entry")
		if err != nil {
			t.Fatalf("GetEntry: %v", err)
		}
		if string(e.Value) != "entry value" || !sameMetadata(e.Metadata, json.RawMessage(`{"owner":"bot"}`)) {
			t.Fatalf("GetEntry after the caller reused its buffers = %s, %s", describe(e.Value), e.Metadata)
		}
	}
	if bp, ok := s.(kv.BulkPutter); ok {
		vals := [][]byte{[]byte("bulk one"), []byte("bulk two")}
		if err := bp.PutMany(ctx(t), []kv.Entry{{Key: "buf:b1", Value: vals[0]}, {Key: "buf:b2", Value: vals[1]}}); err != nil {
			t.Fatalf("PutMany: %v", err)
		}
		scribble(vals[0])
		scribble(vals[1])
		wantValue(t, s, "buf:b1", []byte("bulk one"))
		wantValue(t, s, "buf:b2", []byte("bulk two"))
	}
}
