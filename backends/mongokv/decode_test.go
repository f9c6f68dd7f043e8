package mongokv

import (
	"bytes"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/kvshadow/kvshadow/kv"
)

// decodeSeeds are documents the bot, this package or a bug may have left:
// every shape decodeDoc must either read or refuse.
func decodeSeeds(t testing.TB) [][]byte {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	docs := []bson.D{
		{{Key: "_id", Value: "wordle:1"}, {Key: "value", Value: `{"a":1}`}},
		{{Key: "_id", Value: "wordle:2"}, {Key: "value", Value: "x"}, {Key: "expiresAt", Value: at}},
		{{Key: "_id", Value: "wordle:3"}, {Key: "value", Value: bson.Binary{Data: []byte{0xff, 0}}}},
		{{Key: "_id", Value: "wordle:4"}, {Key: "chunks", Value: bson.D{{Key: "gen", Value: "g"}, {Key: "n", Value: 3}, {Key: "size", Value: 20 << 20}}}},
		{{Key: "_id", Value: "wordle:5"}, {Key: "chunks", Value: bson.D{{Key: "gen", Value: "g"}, {Key: "n", Value: 1}, {Key: "size", Value: int64(1) << 50}}}},
		{{Key: "_id", Value: "wordle:6"}, {Key: "value", Value: 42}},
		{{Key: "_id", Value: 7}, {Key: "value", Value: "x"}},
		{{Key: "_id", Value: "wordle:8"}, {Key: "value", Value: "x"}, {Key: "expiresAt", Value: "tomorrow"}},
		{{Key: "_id", Value: "wordle:9"}},
	}
	var out [][]byte
	for _, d := range docs {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// TestDecodeDocShapes pins what each seed decodes to.
func TestDecodeDocShapes(t *testing.T) {
	seeds := decodeSeeds(t)
	for i, wantOK := range []bool{true, true, true, true, false, false, false, true, false} {
		d, err := decodeDoc(seeds[i])
		if (err == nil) != wantOK {
			t.Errorf("seed %d: err = %v, want ok=%v", i, err, wantOK)
		}
		if err == nil && d.chunks == nil && d.value == nil {
			t.Errorf("seed %d: no value", i)
		}
	}
	if d, _ := decodeDoc(seeds[1]); !d.exp.Equal(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)) || string(d.value) != "x" {
		t.Errorf("seed 1 = %+v", d)
	}
}

// FuzzDecodeDoc feeds decodeDoc whatever a collection may hold (the
// JavaScript bot and other programs write it too): it never panics, and
// what it accepts is a value the contract allows, or a chunk reference
// whose size is one, so that a reader never allocates for a forged size.
func FuzzDecodeDoc(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if bson.Raw(raw).Validate() != nil {
			return // the server only returns valid BSON
		}
		d, err := decodeDoc(raw)
		if err != nil {
			return
		}
		if d.chunks != nil {
			if d.chunks.size < 0 || d.chunks.size > kv.MaxValueSize || d.chunks.n < 1 || d.chunks.gen == "" {
				t.Fatalf("accepted chunk reference %+v", *d.chunks)
			}
			return
		}
		if s, ok := bson.Raw(raw).Lookup("value").StringValueOK(); ok && !bytes.Equal(d.value, []byte(s)) {
			t.Fatalf("string value %q decoded as %q", s, d.value)
		}
	})
}
