package mongokv_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestDocumentShape reads back what the store wrote, through the driver
// alone: the seed's { _id, value, expiresAt? } in the module's collection.
func TestDocumentShape(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk})
	db := rawDB(t, s.Database())

	put := func(key string, value []byte, opts kv.PutOptions) {
		t.Helper()
		if err := s.Put(ctx, key, value, opts); err != nil {
			t.Fatalf("Put(%q): %v", key, err)
		}
	}
	put("wordle:games:42", []byte(`{"word":"apple"}`), kv.PutOptions{TTL: time.Hour})
	put("loldle-emoji:x", []byte("e"), kv.PutOptions{})
	put("plain", []byte{0xff, 0x00, 'b'}, kv.PutOptions{})
	put("Wordle:caps", []byte(""), kv.PutOptions{})

	doc := rawDoc(t, db, "wordle", "wordle:games:42")
	if doc == nil {
		t.Fatal(`no document "wordle:games:42" in collection wordle`)
	}
	if v, ok := doc.Lookup("value").StringValueOK(); !ok || v != `{"word":"apple"}` {
		t.Errorf("value = %v, want the BSON string of the JSON", doc.Lookup("value"))
	}
	exp, ok := doc.Lookup("expiresAt").TimeOK()
	if !ok || !exp.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("expiresAt = %v, want the date %v", doc.Lookup("expiresAt"), clk.Now().Add(time.Hour))
	}
	if keys := fieldNames(t, doc); !slices.Equal(keys, []string{"_id", "expiresAt", "value"}) {
		t.Errorf("fields = %q, want exactly _id, value, expiresAt", keys)
	}

	// Put without a TTL removes expiresAt.
	put("wordle:games:42", []byte(`{"word":"pear"}`), kv.PutOptions{})
	doc = rawDoc(t, db, "wordle", "wordle:games:42")
	if keys := fieldNames(t, doc); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields after Put without TTL = %q, want _id and value", keys)
	}

	// "-" becomes "_" in the collection name; the key keeps its "-".
	if rawDoc(t, db, "loldle_emoji", "loldle-emoji:x") == nil {
		t.Error(`"loldle-emoji:x" is not in collection loldle_emoji`)
	}
	// Bytes that are not UTF-8 are BSON binary; keys without a module go
	// to the default collection; an empty value is an empty string.
	doc = rawDoc(t, db, mongokv.DefaultCollection, "plain")
	if st, data, ok := doc.Lookup("value").BinaryOK(); !ok || st != bson.TypeBinaryGeneric || !bytes.Equal(data, []byte{0xff, 0x00, 'b'}) {
		t.Errorf("value of non-UTF-8 bytes = %v, want generic binary", doc.Lookup("value"))
	}
	doc = rawDoc(t, db, mongokv.DefaultCollection, "Wordle:caps")
	if v, ok := doc.Lookup("value").StringValueOK(); !ok || v != "" {
		t.Errorf("empty value = %v, want the empty string", doc.Lookup("value"))
	}

	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{mongokv.DefaultCollection, "loldle_emoji", "wordle"}; !slices.Equal(names, want) {
		t.Errorf("collections = %q, want %q", names, want)
	}

	// Delete removes the document.
	if err := s.Delete(ctx, "loldle-emoji:x"); err != nil {
		t.Fatal(err)
	}
	if rawDoc(t, db, "loldle_emoji", "loldle-emoji:x") != nil {
		t.Error("document still there after Delete")
	}
}

// TestDocumentsWrittenByTheBot reads documents written the bot's way,
// including an expired one that no TTL monitor has removed yet.
func TestDocumentsWrittenByTheBot(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk})
	coll := rawDB(t, s.Database()).Collection("wordle")
	_, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "wordle:live"}, {Key: "value", Value: `{"n":1}`}},
		bson.D{{Key: "_id", Value: "wordle:soon"}, {Key: "value", Value: "s"}, {Key: "expiresAt", Value: clk.Now().Add(time.Minute)}},
		bson.D{{Key: "_id", Value: "wordle:stale"}, {Key: "value", Value: "x"}, {Key: "expiresAt", Value: clk.Now().Add(-time.Second)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.GetEntry(ctx, "wordle:soon")
	if err != nil || string(e.Value) != "s" || !e.Expiration.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("GetEntry(soon) = %+v, %v", e, err)
	}
	if _, err := s.Get(ctx, "wordle:stale"); err != kv.ErrNotFound {
		t.Fatalf("Get(expired, unswept) = %v, want kv.ErrNotFound", err)
	}
	res, err := s.List(ctx, kv.ListOptions{Prefix: "wordle:"})
	if err != nil || !slices.Equal(res.Keys, []string{"wordle:live", "wordle:soon"}) {
		t.Fatalf("List = %q, %v; want the live keys", res.Keys, err)
	}
	clk.Advance(time.Minute)
	if _, err := s.Get(ctx, "wordle:soon"); err != kv.ErrNotFound {
		t.Fatalf("Get at its expiry = %v, want kv.ErrNotFound", err)
	}
}

// fieldNames returns a document's field names, sorted: servers order the
// fields an upsert creates differently.
func fieldNames(t *testing.T, doc bson.Raw) []string {
	t.Helper()
	elems, err := doc.Elements()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range elems {
		names = append(names, e.Key())
	}
	slices.Sort(names)
	return names
}

// TestChunkedValues checks the layout of values longer than ChunkSize and
// that overwrites and deletes leave no chunk behind.
func TestChunkedValues(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk, ChunkSize: mongokv.MinChunkSize})
	db := rawDB(t, s.Database())
	chunks := func() int64 { return rawCount(t, db, mongokv.ChunkCollection, nil) }

	// A value of exactly ChunkSize stays inline, in the seed's shape.
	if err := s.Put(ctx, "wordle:edge", bytes.Repeat([]byte("e"), mongokv.MinChunkSize), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, ok := rawDoc(t, db, "wordle", "wordle:edge").Lookup("value").StringValueOK(); !ok || len(v) != mongokv.MinChunkSize {
		t.Errorf("a value of exactly ChunkSize is not stored inline")
	}
	if err := s.Delete(ctx, "wordle:edge"); err != nil {
		t.Fatal(err)
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 5*mongokv.MinChunkSize/16+3) // 5 chunks and 48 bytes
	if err := s.Put(ctx, "wordle:big", big, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	doc := rawDoc(t, db, "wordle", "wordle:big")
	if doc.Lookup("value").Type != 0 {
		t.Error("a chunked document still has a value field")
	}
	ref := doc.Lookup("chunks").Document()
	gen := ref.Lookup("gen").StringValue()
	if n := ref.Lookup("n").AsInt64(); n != 6 || ref.Lookup("size").AsInt64() != int64(len(big)) {
		t.Errorf("chunks = %v, want n 6 and size %d", ref, len(big))
	}
	if got := chunks(); got != 6 {
		t.Errorf("%d chunk documents, want 6", got)
	}
	exp := clk.Now().Add(time.Hour)
	for i := range 6 {
		c := rawDoc(t, db, mongokv.ChunkCollection, chunkID(gen, i))
		if c == nil {
			t.Fatalf("chunk %d missing", i)
		}
		_, data, _ := c.Lookup("data").BinaryOK()
		if want := big[i*mongokv.MinChunkSize : min((i+1)*mongokv.MinChunkSize, len(big))]; !bytes.Equal(data, want) {
			t.Errorf("chunk %d holds %d bytes, not its part of the value", i, len(data))
		}
		// The chunks expire with their key, so a TTL monitor removes them.
		if at, ok := c.Lookup("expiresAt").TimeOK(); !ok || !at.Equal(exp) {
			t.Errorf("chunk %d expiresAt = %v, want %v", i, c.Lookup("expiresAt"), exp)
		}
	}
	e, err := s.GetEntry(ctx, "wordle:big")
	if err != nil || !bytes.Equal(e.Value, big) || !e.Expiration.Equal(exp) {
		t.Fatalf("GetEntry(chunked) = %d bytes, %v, %v", len(e.Value), e.Expiration, err)
	}
	if got, err := s.GetMany(ctx, []string{"wordle:big"}); err != nil || len(got) != 1 || !bytes.Equal(got[0].Value, big) {
		t.Fatalf("GetMany(chunked) = %d entries, %v", len(got), err)
	}
	res, err := s.List(ctx, kv.ListOptions{})
	if err != nil || !slices.Equal(res.Keys, []string{"wordle:big"}) {
		t.Fatalf("List = %q, %v; chunks must not be listed", res.Keys, err)
	}

	// Chunked over chunked, without expiry: the old chunks go, the new
	// ones have none.
	big2 := append(bytes.Clone(big), "more"...)
	if err := s.Put(ctx, "wordle:big", big2, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := chunks(); got != 6 {
		t.Errorf("%d chunk documents after a chunked overwrite, want 6", got)
	}
	if n := rawCount(t, db, mongokv.ChunkCollection, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$exists", Value: true}}}}); n != 0 {
		t.Errorf("%d chunks keep an expiry after a Put without TTL", n)
	}
	if v, err := s.Get(ctx, "wordle:big"); err != nil || !bytes.Equal(v, big2) {
		t.Fatalf("Get after chunked overwrite = %d bytes, %v", len(v), err)
	}
	// Inline over chunked: the seed's shape again, no chunks left.
	if err := s.Put(ctx, "wordle:big", []byte("small"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := chunks(); got != 0 {
		t.Errorf("%d chunk documents after an inline overwrite, want 0", got)
	}
	if keys := fieldNames(t, rawDoc(t, db, "wordle", "wordle:big")); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields after inline overwrite = %q", keys)
	}
	// Bulk put over chunked, then Delete and DeleteMany of chunked keys.
	for _, k := range []string{"wordle:a", "wordle:b", "wordle:c"} {
		if err := s.Put(ctx, k, big, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutMany(ctx, []kv.Entry{{Key: "wordle:a", Value: []byte("bulk")}, {Key: "wordle:new", Value: []byte("n")}}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "wordle:a"); err != nil || string(v) != "bulk" {
		t.Fatalf("Get after bulk put over chunked = %q, %v", v, err)
	}
	if got := chunks(); got != 12 {
		t.Errorf("%d chunk documents, want 12 (two chunked keys)", got)
	}
	if err := s.Delete(ctx, "wordle:b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMany(ctx, []string{"wordle:c", "wordle:new", "wordle:missing"}); err != nil {
		t.Fatal(err)
	}
	if got := chunks(); got != 0 {
		t.Errorf("%d chunk documents after deleting every chunked key, want 0", got)
	}
	res, err = s.List(ctx, kv.ListOptions{})
	if err != nil || !slices.Equal(res.Keys, []string{"wordle:a", "wordle:big"}) {
		t.Fatalf("List = %q, %v", res.Keys, err)
	}
}

// chunkID is the documented chunk _id: "<gen>:<5-digit index>".
func chunkID(gen string, i int) string {
	return gen + ":" + string([]byte{'0' + byte(i/10000%10), '0' + byte(i/1000%10), '0' + byte(i/100%10), '0' + byte(i/10%10), '0' + byte(i%10)})
}
