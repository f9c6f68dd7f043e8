package mongokv

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestInlineLimit checks the layout arithmetic against the driver's own
// encoding: a value of exactly InlineLimit bytes makes a document of exactly
// the limit, as a string and as binary, with and without expiry and
// metadata.
func TestInlineLimit(t *testing.T) {
	exp := time.Unix(1_800_000_000, 0)
	for _, key := range []string{"k", "wordle:games:42", strings.Repeat("é", 256)} {
		for _, md := range [][]byte{nil, []byte(`{}`), []byte(`{"a":` + strings.Repeat("1", 1000) + `}`)} {
			for _, hasExp := range []bool{false, true} {
				n := InlineLimit(MinDocumentSize, key, hasExp, md)
				for _, value := range []any{strings.Repeat("v", n), bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: make([]byte, n)}} {
					d := bson.D{{Key: fieldID, Value: key}, {Key: fieldValue, Value: value}}
					if hasExp {
						d = append(d, bson.E{Key: fieldExpires, Value: exp})
					}
					if md != nil {
						d = append(d, bson.E{Key: fieldMetadata, Value: string(md)})
					}
					raw, err := bson.Marshal(d)
					if err != nil {
						t.Fatal(err)
					}
					if len(raw) != MinDocumentSize {
						t.Errorf("key %d bytes, expiry %v, metadata %d bytes: a value of InlineLimit %d makes a %d-byte document, want %d",
							len(key), hasExp, len(md), n, len(raw), MinDocumentSize)
					}
				}
			}
		}
	}
	// The bound that holds whatever the key, expiry and metadata.
	if got := InlineLimit(MaxDocumentSize, strings.Repeat("k", 512), true, make([]byte, 1024)); got != 16_775_619 {
		t.Errorf("worst-case InlineLimit = %d, want 16,775,619", got)
	}
}

func TestChunkDataSize(t *testing.T) {
	gen := bson.NewObjectID().Hex()
	raw, err := bson.Marshal(bson.D{
		{Key: fieldID, Value: chunkID(gen, 99_999)},
		{Key: "data", Value: bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: make([]byte, chunkDataSize(MinDocumentSize))}},
		{Key: fieldExpires, Value: time.Now()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != MinDocumentSize {
		t.Errorf("a full chunk is a %d-byte document, want %d", len(raw), MinDocumentSize)
	}
}
