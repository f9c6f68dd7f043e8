package mongokv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/kv"
)

const (
	// putGuard is how old a generation must be before the sweep may find
	// it unreferenced: a Put takes far less, so only the generation of an
	// interrupted Put (or of a key the bot deleted or overwrote) is ever
	// that old without its document pointing at it.
	putGuard = time.Hour
	// generationGrace is how long a generation's document outlives its
	// key's expiry, so that the sweep still finds it after a TTL monitor
	// removed the key's chunks, and can remove the stale chunks field the
	// bot's overwrite of the key left.
	generationGrace = time.Hour
	// cleanupTimeout bounds the removal of replaced chunks, which goes on
	// after the caller's context ends: the new state is already written.
	cleanupTimeout = 30 * time.Second
)

// chunkRef is the chunks field of a key whose value is chunked.
type chunkRef struct {
	gen  string // the _id prefix of its chunks, unique to one Put
	n    int    // number of chunks
	size int    // value length
}

func decodeChunkRef(v bson.RawValue) (*chunkRef, error) {
	sub, ok := v.DocumentOK()
	if !ok {
		return nil, errBadDocument
	}
	gen, ok1 := sub.Lookup("gen").StringValueOK()
	n, ok2 := sub.Lookup("n").AsInt64OK()
	size, ok3 := sub.Lookup("size").AsInt64OK()
	// A size beyond the contract's largest value is a forged or corrupt
	// reference: a reader would allocate it before reading a chunk.
	if !ok1 || !ok2 || !ok3 || gen == "" || n < 1 || n > 99_999 || size < 0 || size > kv.MaxValueSize {
		return nil, errBadDocument
	}
	return &chunkRef{gen: gen, n: int(n), size: int(size)}, nil
}

// newGeneration names the chunks of one Put: an ObjectID whose time is the
// store's clock, so that the sweep can tell how old a generation is.
func (s *Store) newGeneration() string {
	id := bson.NewObjectID()
	binary.BigEndian.PutUint32(id[:4], uint32(s.clock.Now().Unix()))
	return id.Hex()
}

func generationTime(gen string) (time.Time, bool) {
	id, err := bson.ObjectIDFromHex(gen)
	if err != nil {
		return time.Time{}, false
	}
	return id.Timestamp(), true
}

// chunkID names chunk i of gen; chunks are always addressed by it (see byID).
func chunkID(gen string, i int) string { return fmt.Sprintf("%s:%05d", gen, i) }

// errChunksGone: the chunks a document pointed to were replaced while they
// were read; the read starts again.
var errChunksGone = errors.New("mongokv: the chunks of a value changed while it was read")

// readChunks assembles a chunked value, one chunk a round trip (a reply
// holds at most 16 MiB anyway).
func (s *Store) readChunks(ctx context.Context, db *mongo.Database, ref *chunkRef) ([]byte, error) {
	chunks := db.Collection(ChunkCollection)
	value := make([]byte, 0, ref.size)
	for i := range ref.n {
		raw, err := chunks.FindOne(ctx, byID(chunkID(ref.gen, i))).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, errChunksGone
		}
		if err != nil {
			return nil, s.client.opError(ctx, "get", err)
		}
		_, data, ok := raw.Lookup("data").BinaryOK()
		if !ok || len(value)+len(data) > ref.size {
			return nil, errChunksGone
		}
		value = append(value, data...)
	}
	if len(value) != ref.size {
		return nil, errChunksGone
	}
	return value, nil
}

// putChunked writes a value too large for one document in the order the
// package doc gives (generation, chunks, then the switch of the key's
// document, nothing after), and deletes the chunks it pointed at before.
func (s *Store) putChunked(ctx context.Context, db *mongo.Database, coll string, e kv.Entry, now time.Time) error {
	key, value, exp := e.Key, e.Value, e.Expiration
	for _, c := range []string{ChunkCollection, GenerationCollection} {
		if err := s.client.ensureTTL(ctx, db, c); err != nil {
			return err
		}
	}
	size := chunkDataSize(s.maxDoc)
	gen := s.newGeneration()
	ref := &chunkRef{gen: gen, n: (len(value) + size - 1) / size, size: len(value)}
	generation := bson.D{{Key: fieldID, Value: gen}, {Key: "key", Value: key}, {Key: "n", Value: ref.n}}
	if !exp.IsZero() {
		generation = append(generation, bson.E{Key: fieldExpires, Value: exp.Add(generationGrace)})
	}
	if _, err := db.Collection(GenerationCollection).InsertOne(ctx, generation); err != nil {
		return s.client.opError(ctx, "put", err)
	}
	docs := make([]any, ref.n)
	for i := range docs {
		data := value[i*size : min((i+1)*size, len(value))]
		d := bson.D{
			{Key: fieldID, Value: chunkID(gen, i)},
			{Key: "data", Value: bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: data}},
		}
		if !exp.IsZero() {
			d = append(d, bson.E{Key: fieldExpires, Value: exp})
		}
		docs[i] = d
	}
	if _, err := db.Collection(ChunkCollection).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
		return s.client.opError(ctx, "put", err)
	}

	set := bson.D{{Key: fieldChunks, Value: bson.D{{Key: "gen", Value: gen}, {Key: "n", Value: ref.n}, {Key: "size", Value: ref.size}}}}
	update := setFields(set, []string{fieldValue}, exp, e.Metadata)
	c := db.Collection(coll)
	var before bson.Raw
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		before, err = c.FindOneAndUpdate(ctx, byID(key), update, upsertReturnOld).Raw()
		if !mongo.IsDuplicateKeyError(err) { // a concurrent first insert can win the upsert
			break
		}
	}
	switch {
	case err == nil:
		s.dropOldChunks(ctx, db, before)
	case errors.Is(err, mongo.ErrNoDocuments): // inserted
	default:
		// Only a refusal is sure not to have switched the document; after
		// a lost connection the sweep finds the generation unreferenced.
		if !unreachable(err) && ctx.Err() == nil {
			_, _ = s.deleteChunks(context.WithoutCancel(ctx), db, ref)
		}
		return s.client.opError(ctx, "put", err)
	}
	return nil
}

// eachChunk applies one write per chunk of ref, BatchSize a command, and
// returns how many chunks it deleted. UpdateMany and DeleteMany on an exact
// _id touch one document, as their One forms would, without FerretDB's
// connection hold (see putBatch).
func (s *Store) eachChunk(ctx context.Context, db *mongo.Database, ref *chunkRef, model func(id string) mongo.WriteModel) (int64, error) {
	ids := make([]string, ref.n)
	for i := range ids {
		ids[i] = chunkID(ref.gen, i)
	}
	var deleted int64
	for batch := range slices.Chunk(ids, BatchSize) {
		models := make([]mongo.WriteModel, len(batch))
		for i, id := range batch {
			models[i] = model(id)
		}
		res, err := db.Collection(ChunkCollection).BulkWrite(ctx, models, unordered)
		if err != nil {
			return deleted, err
		}
		deleted += res.DeletedCount
	}
	return deleted, nil
}

// deleteChunks deletes a generation: its chunks, then its generation
// document, so that an interrupted deletion stays visible to the sweep. It
// returns how many documents it deleted.
func (s *Store) deleteChunks(ctx context.Context, db *mongo.Database, ref *chunkRef) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	n, err := s.eachChunk(ctx, db, ref, func(id string) mongo.WriteModel {
		return mongo.NewDeleteManyModel().SetFilter(byID(id))
	})
	if err != nil {
		return n, err
	}
	res, err := db.Collection(GenerationCollection).DeleteMany(ctx, byID(ref.gen))
	if err != nil {
		return n, err
	}
	return n + res.DeletedCount, nil
}

// dropOldChunks deletes the chunks a replaced or deleted document pointed at.
// The new state is already written, so this goes on after the caller's
// context ends, and a failure only leaves garbage: it is logged (by chunk
// generation, never by key) rather than returned.
func (s *Store) dropOldChunks(ctx context.Context, db *mongo.Database, before bson.Raw) {
	v := before.Lookup(fieldChunks)
	if v.Type == 0 {
		return
	}
	ref, err := decodeChunkRef(v)
	if err != nil {
		return
	}
	if _, err := s.deleteChunks(context.WithoutCancel(ctx), db, ref); err != nil {
		s.client.logger.Warn("mongokv: could not delete the chunks of a replaced value; they stay as garbage",
			slog.String("database", s.db), slog.String("chunks", ref.gen), slog.String("error", s.client.redact.redact(err.Error())))
	}
}
