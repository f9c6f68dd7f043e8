package mongokv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// BatchSize is the most keys one bulk command carries.
const BatchSize = 1000

// group splits keys by collection, in first-seen order, without duplicates.
func group(keys []string) (order []string, byColl map[string][]string) {
	byColl = make(map[string][]string)
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		c := collectionOf(k)
		if _, ok := byColl[c]; !ok {
			order = append(order, c)
		}
		byColl[c] = append(byColl[c], k)
	}
	return order, byColl
}

// GetMany implements kv.BulkGetter as the package documentation's Round
// trips say; chunked values cost their own reads.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]kv.Entry, error) {
	if err := kv.ValidateKeys(keys); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return []kv.Entry{}, nil
	}
	db, err := s.database(ctx)
	if err != nil {
		return nil, err
	}
	order, byColl := group(keys)
	out := make([]kv.Entry, 0, len(keys))
	now := s.clock.Now()
	for _, c := range order {
		for batch := range slices.Chunk(byColl[c], BatchSize) {
			if out, err = s.getBatch(ctx, db, c, batch, now, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (s *Store) getBatch(ctx context.Context, db *mongo.Database, c string, batch []string, now time.Time, out []kv.Entry) ([]kv.Entry, error) {
	filter := bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: batch}}}, notExpired(now)}
	// At most len(batch) documents match; a batch one larger lets the
	// server see the end and close the cursor in the first reply.
	opts := options.Find().SetLimit(int64(len(batch))).SetBatchSize(int32(len(batch) + 1))
	split := func() ([]kv.Entry, error) {
		half := len(batch) / 2
		out, err := s.getBatch(ctx, db, c, batch[:half], now, out)
		if err != nil {
			return nil, err
		}
		return s.getBatch(ctx, db, c, batch[half:], now, out)
	}
	cur, err := db.Collection(c).Find(ctx, filter, opts)
	if replyTooLarge(err) && len(batch) > 1 && ctx.Err() == nil {
		return split()
	}
	if err != nil {
		return nil, s.client.opError(ctx, "get many", err)
	}
	var chunked []string
	var found []kv.Entry
	for cur.Next(ctx) {
		d, err := decodeDoc(cur.Current)
		if err != nil {
			cur.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		if d.chunks != nil {
			chunked = append(chunked, d.key)
			continue
		}
		found = append(found, d.entry())
	}
	err = cur.Err()
	cur.Close(context.WithoutCancel(ctx))
	if replyTooLarge(err) && len(batch) > 1 && ctx.Err() == nil {
		return split()
	}
	if err != nil {
		return nil, s.client.opError(ctx, "get many", err)
	}
	out = append(out, found...)
	for _, k := range chunked {
		e, err := s.getEntry(ctx, db, k)
		if errors.Is(err, kv.ErrNotFound) {
			continue // deleted since the batch was read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// replyTooLarge reports the driver's refusal of a reply longer than its
// 48 MB message limit (its error is not exported; the driver is pinned).
func replyTooLarge(err error) bool {
	return err != nil && strings.Contains(err.Error(), "length of read message too large")
}

// PutMany implements kv.BulkPutter (see the package doc's Round trips). When
// a key appears twice the last entry wins. Values too large for one document,
// and upserts refused on a duplicate key, go through Put's own path.
func (s *Store) PutMany(ctx context.Context, entries []kv.Entry) error {
	now := s.clock.Now()
	if err := kv.ValidateEntries(entries, now); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	db, err := s.database(ctx)
	if err != nil {
		return err
	}
	last := make(map[string]int, len(entries))
	keys := make([]string, 0, len(entries))
	for i, e := range entries {
		if _, ok := last[e.Key]; !ok {
			keys = append(keys, e.Key)
		}
		last[e.Key] = i
	}
	order, byColl := group(keys)
	for _, c := range order {
		if err := s.client.ensureTTL(ctx, db, c); err != nil {
			return err
		}
		var inline []kv.Entry
		for _, k := range byColl[c] {
			e := entries[last[k]]
			if !s.fitsInline(e) {
				if err := s.putChunked(ctx, db, c, e, now); err != nil {
					return err
				}
				continue
			}
			inline = append(inline, e)
		}
		for batch := range slices.Chunk(inline, BatchSize) {
			if err := s.putBatch(ctx, db, c, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

var unordered = options.BulkWrite().SetOrdered(false)

func (s *Store) putBatch(ctx context.Context, db *mongo.Database, coll string, batch []kv.Entry) error {
	// UpdateMany on the unique _id updates at most the one document, as
	// UpdateOne would. It is used because FerretDB v1.24 keeps a
	// connection open for each single-document update statement that
	// matched until the whole command ends, and a command of more than 100
	// such statements waits forever for its pool.
	models := make([]mongo.WriteModel, len(batch))
	for i, e := range batch {
		models[i] = mongo.NewUpdateManyModel().
			SetFilter(byID(e.Key)).
			SetUpdate(guardedUpdate(e.Value, e.Expiration, e.Metadata)).
			SetUpsert(true)
	}
	_, err := db.Collection(coll).BulkWrite(ctx, models, unordered)
	if err == nil {
		return nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return s.client.opError(ctx, "put many", err)
	}
	var failed []mongo.BulkWriteError
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(batch) {
			failed = append(failed, we)
			continue
		}
		e := batch[we.Index]
		switch {
		case we.Code == codeTypeMismatch: // the guard met a chunked value
			err = s.replaceChunked(ctx, db, db.Collection(coll), e.Key, replaceUpdate(e.Value, e.Expiration, e.Metadata))
		case isDuplicateKeyCode(we.Code): // a concurrent first insert won
			err = s.putInline(ctx, db, coll, e)
		default:
			failed = append(failed, we)
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("mongokv: put many: %d of %d writes refused, first: %w",
			len(failed), len(batch), s.client.wrap("put many", errors.New(failed[0].Message)))
	}
	return nil
}

// DeleteMany implements kv.BulkDeleter: per collection and BatchSize keys,
// one unordered BulkWrite deletes the keys that hold inline values; only
// when some keys were left (missing, or chunked) does a second query find
// the chunked ones, which are deleted with their chunks.
func (s *Store) DeleteMany(ctx context.Context, keys []string) error {
	if err := kv.ValidateKeys(keys); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	db, err := s.database(ctx)
	if err != nil {
		return err
	}
	order, byColl := group(keys)
	for _, c := range order {
		coll := db.Collection(c)
		for batch := range slices.Chunk(byColl[c], BatchSize) {
			inline := bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: batch}}}, noChunks}
			res, err := coll.BulkWrite(ctx, []mongo.WriteModel{mongo.NewDeleteManyModel().SetFilter(inline)}, unordered)
			if err != nil {
				return s.client.opError(ctx, "delete many", err)
			}
			if res.DeletedCount == int64(len(batch)) {
				continue
			}
			if err := s.deleteChunkedBatch(ctx, db, coll, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// noChunks matches documents that hold their value inline.
var noChunks = bson.E{Key: fieldChunks, Value: bson.D{{Key: "$exists", Value: false}}}

func (s *Store) deleteChunkedBatch(ctx context.Context, db *mongo.Database, coll *mongo.Collection, batch []string) error {
	filter := bson.D{{Key: fieldID, Value: bson.D{{Key: "$in", Value: batch}}}, hasChunks}
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: fieldID, Value: 1}}))
	if err != nil {
		return s.client.opError(ctx, "delete many", err)
	}
	var chunked []string
	for cur.Next(ctx) {
		if id, ok := cur.Current.Lookup(fieldID).StringValueOK(); ok {
			chunked = append(chunked, id)
		}
	}
	err = cur.Err()
	cur.Close(context.WithoutCancel(ctx))
	if err != nil {
		return s.client.opError(ctx, "delete many", err)
	}
	for _, k := range chunked {
		if err := s.deleteKey(ctx, db, coll, k); err != nil {
			return err
		}
	}
	return nil
}
