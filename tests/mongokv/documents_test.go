package mongokv_test

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
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

// smallDocs is a document limit small enough to chunk values cheaply; the
// layout arithmetic is the same at MongoDB's 16 MiB.
const smallDocs = mongokv.MinDocumentSize

// chunkData is the data a chunk holds under smallDocs: the limit less the
// chunk document's 75 bytes of _id, field names and expiry.
const chunkData = smallDocs - 75

// TestChunkedValues checks that every value that fits in one document is
// stored inline, the layout of the larger ones, and that overwrites and
// deletes leave no chunk behind.
func TestChunkedValues(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	chunks := func() int64 { return rawCount(t, db, mongokv.ChunkCollection, nil) }
	gens := func() int64 { return rawCount(t, db, mongokv.GenerationCollection, nil) }

	// A value of exactly the inline limit stays inline, in the seed's
	// shape, filling its document to the byte; with an expiry the limit is
	// 19 bytes lower.
	for _, ttl := range []time.Duration{0, time.Hour} {
		limit := mongokv.InlineLimit(smallDocs, "wordle:edge", ttl != 0, nil)
		if err := s.Put(ctx, "wordle:edge", bytes.Repeat([]byte("e"), limit), kv.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
		doc := rawDoc(t, db, "wordle", "wordle:edge")
		if v, ok := doc.Lookup("value").StringValueOK(); !ok || len(v) != limit || len(doc) != smallDocs {
			t.Errorf("TTL %v: a value of exactly InlineLimit (%d) is not inline in a full document (document %d bytes)", ttl, limit, len(doc))
		}
		if err := s.Put(ctx, "wordle:edge", bytes.Repeat([]byte("e"), limit+1), kv.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
		if doc := rawDoc(t, db, "wordle", "wordle:edge"); doc.Lookup("value").Type != 0 || doc.Lookup("chunks").Type == 0 {
			t.Errorf("TTL %v: a value one byte over InlineLimit is not chunked", ttl)
		}
		if err := s.Delete(ctx, "wordle:edge"); err != nil {
			t.Fatal(err)
		}
	}
	if chunks() != 0 || gens() != 0 {
		t.Fatalf("%d chunks and %d generations left after Delete", chunks(), gens())
	}

	big := bytes.Repeat([]byte("0123456789abcdef"), 5*chunkData/16+3) // 5 chunks and a bit
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
	g := rawDoc(t, db, mongokv.GenerationCollection, gen)
	if g.Lookup("key").StringValue() != "wordle:big" || g.Lookup("n").AsInt64() != 6 || !g.Lookup("expiresAt").Time().Equal(exp.Add(time.Hour)) {
		t.Errorf("generation document = %v, want the owner key, n 6 and an hour past the key's expiry", g)
	}
	for i := range 6 {
		c := rawDoc(t, db, mongokv.ChunkCollection, chunkID(gen, i))
		if c == nil {
			t.Fatalf("chunk %d missing", i)
		}
		if i == 0 && len(c) != smallDocs {
			t.Errorf("a full chunk is a %d-byte document, want %d", len(c), smallDocs)
		}
		_, data, _ := c.Lookup("data").BinaryOK()
		if want := big[i*chunkData : min((i+1)*chunkData, len(big))]; !bytes.Equal(data, want) {
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
	if got := chunks(); got != 6 || gens() != 1 {
		t.Errorf("%d chunk documents and %d generations after a chunked overwrite, want 6 and 1", got, gens())
	}
	for _, c := range []string{mongokv.ChunkCollection, mongokv.GenerationCollection} {
		if n := rawCount(t, db, c, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$exists", Value: true}}}}); n != 0 {
			t.Errorf("%d documents of %s keep an expiry after a Put without TTL", n, c)
		}
	}
	if v, err := s.Get(ctx, "wordle:big"); err != nil || !bytes.Equal(v, big2) {
		t.Fatalf("Get after chunked overwrite = %d bytes, %v", len(v), err)
	}
	// Inline over chunked: the seed's shape again, no chunks left.
	if err := s.Put(ctx, "wordle:big", []byte("small"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := chunks(); got != 0 || gens() != 0 {
		t.Errorf("%d chunk documents and %d generations after an inline overwrite, want 0", got, gens())
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
	if got := chunks(); got != 0 || gens() != 0 {
		t.Errorf("%d chunk documents and %d generations after deleting every chunked key, want 0", got, gens())
	}
	res, err = s.List(ctx, kv.ListOptions{})
	if err != nil || !slices.Equal(res.Keys, []string{"wordle:a", "wordle:big"}) {
		t.Fatalf("List = %q, %v", res.Keys, err)
	}
}

// TestSweepOrphanedChunks: the bot deletes one chunked key and overwrites
// another with an inline value, knowing nothing of chunks. The sweep leaves
// young generations alone (a Put may be under way) and deletes the ones no
// document references once they are old enough, keeping the live one.
func TestSweepOrphanedChunks(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	big := bytes.Repeat([]byte("x"), 2*chunkData) // two chunks each
	for _, k := range []string{"wordle:deleted", "wordle:overwritten", "wordle:live"} {
		if err := s.Put(ctx, k, big, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	coll := db.Collection("wordle")
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "wordle:deleted"}}); err != nil {
		t.Fatal(err)
	}
	botPut := bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: "the bot's"}}}, {Key: "$unset", Value: bson.D{{Key: "expiresAt", Value: ""}}}}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "wordle:overwritten"}}, botPut, options.UpdateOne().SetUpsert(true)); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "wordle:overwritten"); err != nil || string(v) != "the bot's" {
		t.Fatalf("Get after the bot's overwrite = %q, %v; the value in the document wins", v, err)
	}

	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep of young generations = %d, %v; want 0", n, err)
	}
	clk.Advance(61 * time.Minute)
	n, err := s.Sweep(ctx)
	if err != nil || n != 2*(2+1) {
		t.Fatalf("Sweep = %d, %v; want the 2 chunks and the generation of each orphan", n, err)
	}
	if got := rawCount(t, db, mongokv.ChunkCollection, nil); got != 2 {
		t.Errorf("%d chunks left, want the live key's 2", got)
	}
	if keys := fieldNames(t, rawDoc(t, db, "wordle", "wordle:overwritten")); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields of the bot's overwrite after the sweep = %q, want the seed's shape", keys)
	}
	if v, err := s.Get(ctx, "wordle:live"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("Get(live chunked key) after the sweep = %d bytes, %v", len(v), err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want 0", n, err)
	}
}

// TestSweepShortLivedOrphans: the bot overwrites and deletes chunked keys
// whose TTL is shorter than the hour a generation must reach before the
// sweep judges it. Once the keys have expired the sweep still finds their
// generations: the overwrite loses its stale chunks field, and no chunk or
// generation is left.
func TestSweepShortLivedOrphans(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	big := bytes.Repeat([]byte("x"), 2*chunkData)
	for _, k := range []string{"wordle:deleted", "wordle:overwritten"} {
		if err := s.Put(ctx, k, big, kv.PutOptions{TTL: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	coll := db.Collection("wordle")
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: "wordle:deleted"}}); err != nil {
		t.Fatal(err)
	}
	botPut := bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: "the bot's"}}}, {Key: "$unset", Value: bson.D{{Key: "expiresAt", Value: ""}}}}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "wordle:overwritten"}}, botPut); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Minute)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if keys := fieldNames(t, rawDoc(t, db, "wordle", "wordle:overwritten")); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields of the bot's overwrite after the sweep = %q, want the seed's shape", keys)
	}
	if c, g := rawCount(t, db, mongokv.ChunkCollection, nil), rawCount(t, db, mongokv.GenerationCollection, nil); c+g != 0 {
		t.Errorf("%d chunks and %d generations left", c, g)
	}
	if v, err := s.Get(ctx, "wordle:overwritten"); err != nil || string(v) != "the bot's" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// TestChunksNeverExpireBeforeTheirDocument: a chunked Put cut short right
// after its document is switched to the new chunks (its context ends as
// the server answers) leaves no document pointing at chunks that expire:
// a TTL monitor that deletes every expired document an hour on, then the
// sweep, leave the key readable with the new value.
func TestChunksNeverExpireBeforeTheirDocument(t *testing.T) {
	var armed atomic.Bool
	var cut context.CancelFunc
	monitor := &event.CommandMonitor{Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		if e.CommandName == "findAndModify" && armed.CompareAndSwap(true, false) {
			cut()
		}
	}}
	client := newClient(t, mongokv.ClientConfig{Options: func(o *options.ClientOptions) { o.SetMonitor(monitor) }})
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, client, mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	big := bytes.Repeat([]byte("y"), 3*chunkData)
	if err := s.Put(t.Context(), "wordle:k", big, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	newer := append(bytes.Clone(big), "newer"...)
	ctx, cancel := context.WithCancel(t.Context())
	cut = cancel
	armed.Store(true)
	_ = s.Put(ctx, "wordle:k", newer, kv.PutOptions{}) // cut short: its error says nothing here
	cancel()
	clk.Advance(61 * time.Minute)
	ttlMonitor := bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: clk.Now()}}}}
	for _, c := range []string{"wordle", mongokv.ChunkCollection, mongokv.GenerationCollection} {
		if _, err := db.Collection(c).DeleteMany(t.Context(), ttlMonitor); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(t.Context(), "wordle:k"); err != nil || !bytes.Equal(v, newer) {
		t.Fatalf("Get after the cut-short Put, an hour of TTL deletions and a sweep = %d bytes, %v; want the newer value", len(v), err)
	}
}

// chunkID is the documented chunk _id: "<gen>:<5-digit index>".
func chunkID(gen string, i int) string {
	return gen + ":" + string([]byte{'0' + byte(i/10000%10), '0' + byte(i/1000%10), '0' + byte(i/100%10), '0' + byte(i/10%10), '0' + byte(i%10)})
}

// TestInlineUpToMongoDBsLimit writes a value that fills a document to
// MongoDB's 16 MiB exactly, which the server must accept inline where the bot
// reads it, and one byte more, which is chunked.
func TestInlineUpToMongoDBsLimit(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{})
	db := rawDB(t, s.Database())
	const key = "wordle:full"
	limit := mongokv.InlineLimit(mongokv.MaxDocumentSize, key, true, nil)
	value := bytes.Repeat([]byte("f"), limit)
	if err := s.Put(ctx, key, value, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatalf("Put of %d bytes (a full document): %v", limit, err)
	}
	doc := rawDoc(t, db, "wordle", key)
	if v, ok := doc.Lookup("value").StringValueOK(); !ok || len(v) != limit || len(doc) != mongokv.MaxDocumentSize {
		t.Fatalf("value of %d bytes: document of %d bytes, inline %v; want inline in exactly %d", limit, len(doc), ok, mongokv.MaxDocumentSize)
	}
	value = append(value, 'f')
	if err := s.Put(ctx, key, value, kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatalf("Put of %d bytes: %v", len(value), err)
	}
	if doc := rawDoc(t, db, "wordle", key); doc.Lookup("value").Type != 0 || doc.Lookup("chunks").Document().Lookup("n").AsInt64() != 2 {
		t.Fatalf("a value one byte over the limit: %v, want two chunks", doc.Lookup("chunks"))
	}
	if got, err := s.Get(ctx, key); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("Get = %d bytes, %v", len(got), err)
	}
}

// TestMetadataField: metadata is one extra field beside value, the JSON text
// as a string, absent when the key has none, so that a document without
// metadata keeps the seed's shape; it goes with a chunked value too.
func TestMetadataField(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	md := []byte(`{"author":"wrangler","$x.y":[1,2]}`)
	if err := s.PutEntry(ctx, kv.Entry{Key: "wordle:m", Value: []byte("v"), Metadata: md}); err != nil {
		t.Fatal(err)
	}
	doc := rawDoc(t, db, "wordle", "wordle:m")
	if keys := fieldNames(t, doc); !slices.Equal(keys, []string{"_id", "metadata", "value"}) {
		t.Errorf("fields = %q, want _id, metadata, value", keys)
	}
	if got, ok := doc.Lookup("metadata").StringValueOK(); !ok || got != string(md) {
		t.Errorf("metadata = %v, want the JSON text as a string", doc.Lookup("metadata"))
	}
	if err := s.Put(ctx, "wordle:m", []byte("v2"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if keys := fieldNames(t, rawDoc(t, db, "wordle", "wordle:m")); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields after Put = %q, want the seed's _id and value", keys)
	}

	// The metadata counts against the document: a value that fits alone
	// is chunked with it, and keeps it.
	limit := mongokv.InlineLimit(smallDocs, "wordle:big", false, nil)
	big := bytes.Repeat([]byte("b"), limit)
	if err := s.PutMany(ctx, []kv.Entry{{Key: "wordle:big", Value: big, Metadata: md}}); err != nil {
		t.Fatal(err)
	}
	doc = rawDoc(t, db, "wordle", "wordle:big")
	if doc.Lookup("chunks").Type == 0 || doc.Lookup("metadata").StringValue() != string(md) {
		t.Errorf("a value that fits only without its metadata: %v; want chunked with the metadata on the key's document", doc)
	}
	got, err := s.GetMany(ctx, []string{"wordle:big", "wordle:m"})
	if err != nil || len(got) != 2 {
		t.Fatalf("GetMany = %d entries, %v", len(got), err)
	}
	for _, e := range got {
		if want := map[string]string{"wordle:big": string(md), "wordle:m": ""}[e.Key]; string(e.Metadata) != want {
			t.Errorf("GetMany %s metadata = %s, want %q", e.Key, e.Metadata, want)
		}
	}
	if err := s.PutEntry(ctx, kv.Entry{Key: "wordle:big", Value: []byte("small")}); err != nil {
		t.Fatal(err)
	}
	if keys := fieldNames(t, rawDoc(t, db, "wordle", "wordle:big")); !slices.Equal(keys, []string{"_id", "value"}) {
		t.Errorf("fields after an inline PutEntry without metadata = %q", keys)
	}
}
