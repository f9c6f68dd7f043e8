package keep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// KeptCollection holds a MongoStore's kept sides, in the database of the
// control documents: one document per side, and the parts of its value.
const KeptCollection = "kvshadow.kept"

// PartSize is the most value bytes one document of KeptCollection holds: a
// Workers KV value (25 MiB) is split, since MongoDB's documents hold
// 16 MiB.
const PartSize = 8 << 20

// MongoStore is a Store in KeptCollection. Keeping a side costs a bounded
// number of requests however many are kept: the count and bytes of the
// sides live in a totals document, kept by increments (and recounted
// every recountEvery keeps, as a crash between a side's insert and its
// increment leaves them off), and the oldest sides past the bounds, and
// those past their time, are found by indexes on keptAt and until, a few
// at each Keep. The collection needs no TTL index, which not every
// MongoDB-compatible server honours.
type MongoStore struct {
	coll  *mongo.Collection
	cfg   Config
	clock clock.Clock
	rate  *rate
	index sync.Once
}

var _ Store = (*MongoStore)(nil)

// NewMongoStore returns the MongoStore in db's KeptCollection.
func NewMongoStore(db *mongo.Database, cfg Config) *MongoStore {
	return &MongoStore{coll: db.Collection(KeptCollection), cfg: cfg, clock: clock.OrReal(cfg.Clock), rate: newRate(cfg)}
}

// totalsID is the _id of the totals document of KeptCollection.
const totalsID = "totals"

// totalsDoc counts the sides kept and the bytes of their values; Keeps
// counts the Keeps, by which the totals are recounted.
type totalsDoc struct {
	Count int64 `bson:"count"`
	Bytes int64 `bson:"bytes"`
	Keeps int64 `bson:"keeps"`
}

// recountEvery is how many Keeps go between two recounts of the totals: a
// recount reads every side's document, so it is rare enough that a Keep
// costs a bounded number of requests on average.
const recountEvery = 1024

// sweepBatch is how many sides a Keep removes at most per pass, past their
// time or past the bounds.
const sweepBatch = 64

// sides is the filter of the sides' documents (neither parts nor totals).
var sides = bson.D{{Key: "parts", Value: bson.D{{Key: "$exists", Value: true}}}}

type keptDoc struct {
	ID         string      `bson:"_id"`
	Key        string      `bson:"key"`
	Found      bool        `bson:"found"`
	Expiration time.Time   `bson:"expiration,omitempty"`
	Metadata   string      `bson:"metadata,omitempty"`
	Standing   Fingerprint `bson:"standing"`
	KeptAt     time.Time   `bson:"keptAt"`
	Until      time.Time   `bson:"until"`
	Parts      int         `bson:"parts"`
	Size       int64       `bson:"size"`
}

type partDoc struct {
	ID    string    `bson:"_id"` // the side's ref, "/", the part's index
	Ref   string    `bson:"ref"`
	I     int       `bson:"i"`
	Data  []byte    `bson:"data"`
	Until time.Time `bson:"until"`
}

func storeErr(what string, err error) error { return fmt.Errorf("%w: %s: %w", ErrStore, what, err) }

// Keep implements dualwrite.Keeper: the parts first, the side's document
// last, so that a side that Load finds is whole; then the totals, and the
// sides past the bounds go.
func (m *MongoStore) Keep(ctx context.Context, k dualwrite.Kept) (string, error) {
	now := m.clock.Now()
	v, err := valueOf(k, control.NewID(), now, m.cfg.keepFor())
	if err != nil {
		return "", err
	}
	if err := m.rate.take(now, int64(len(v.Entry.Value))); err != nil {
		return "", err
	}
	m.index.Do(func() { m.ensureIndexes(ctx) })
	if err := m.expire(ctx, now); err != nil {
		return "", err
	}
	doc := keptDoc{ID: v.Ref, Key: v.Key, Found: v.Found, Expiration: v.Entry.Expiration, Standing: v.Standing,
		KeptAt: now, Until: v.Until}
	if v.Entry.Metadata != nil {
		doc.Metadata = string(v.Entry.Metadata)
	}
	var parts []any
	for data := v.Entry.Value; len(data) > 0; data = data[min(len(data), PartSize):] {
		parts = append(parts, partDoc{ID: fmt.Sprintf("%s/%d", v.Ref, len(parts)), Ref: v.Ref, I: len(parts),
			Data: data[:min(len(data), PartSize)], Until: v.Until})
	}
	doc.Parts, doc.Size = len(parts), int64(len(v.Entry.Value))
	for _, p := range parts {
		// One at a time: a batch of parts could pass MongoDB's 48 MB
		// message limit.
		if _, err := m.coll.InsertOne(ctx, p); err != nil {
			return "", storeErr("keeping the value", err)
		}
	}
	if _, err := m.coll.InsertOne(ctx, doc); err != nil {
		return "", storeErr("keeping the side", err)
	}
	// The side is kept: a bound that fails is kept at the next Keep.
	_ = m.bound(ctx, v.Ref, doc.Size)
	return v.Ref, nil
}

// ensureIndexes creates the indexes by which the oldest sides and those
// past their time are found; a server that refuses them scans instead.
func (m *MongoStore) ensureIndexes(ctx context.Context) {
	_, _ = m.coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "keptAt", Value: 1}, {Key: "_id", Value: 1}}},
		{Keys: bson.D{{Key: "until", Value: 1}}},
	})
}

// expire removes up to sweepBatch sides past their time, and every part
// past its time.
func (m *MongoStore) expire(ctx context.Context, now time.Time) error {
	past := bson.D{{Key: "until", Value: bson.D{{Key: "$lte", Value: now}}}}
	docs, err := m.find(ctx, append(past, sides...), bson.D{{Key: "until", Value: 1}})
	if err != nil {
		return storeErr("finding the sides past their time", err)
	}
	if err := m.remove(ctx, docs); err != nil {
		return err
	}
	if _, err := m.coll.DeleteMany(ctx, append(past, bson.E{Key: "ref", Value: bson.D{{Key: "$exists", Value: true}}})); err != nil {
		return storeErr("removing the values past their time", err)
	}
	return nil
}

// find returns up to sweepBatch sides' IDs and sizes matching filter, in
// the order of sort.
func (m *MongoStore) find(ctx context.Context, filter, sort bson.D) ([]keptDoc, error) {
	cur, err := m.coll.Find(ctx, filter, options.Find().SetSort(sort).SetLimit(sweepBatch).
		SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "size", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []keptDoc
	err = cur.All(ctx, &docs)
	return docs, err
}

// remove removes the sides docs, their values, and what they counted in
// the totals: each side only by the call that removed it.
func (m *MongoStore) remove(ctx context.Context, docs []keptDoc) error {
	var n, size int64
	for _, d := range docs {
		res, err := m.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}})
		if err != nil {
			return storeErr("removing a side", err)
		}
		if res.DeletedCount == 1 {
			n, size = n+1, size+d.Size
		}
		if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "ref", Value: d.ID}}); err != nil {
			return storeErr("removing a side's value", err)
		}
	}
	if n == 0 {
		return nil
	}
	_, err := m.add(ctx, -n, -size, 0)
	return err
}

// add changes the totals by n sides, size bytes and keeps Keeps, and
// returns them after.
func (m *MongoStore) add(ctx context.Context, n, size, keeps int64) (totalsDoc, error) {
	var t totalsDoc
	err := m.coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: totalsID}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: n}, {Key: "bytes", Value: size}, {Key: "keeps", Value: keeps}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&t)
	if err != nil {
		return totalsDoc{}, storeErr("counting the sides", err)
	}
	return t, nil
}

// bound counts the side just kept (ref, of size bytes) and removes the
// oldest others past MaxKept and MaxKeptBytes, a batch at a time.
func (m *MongoStore) bound(ctx context.Context, ref string, size int64) error {
	t, err := m.add(ctx, 1, size, 1)
	if err != nil {
		return err
	}
	if t.Keeps%recountEvery == 0 || t.Count < 1 || t.Bytes < size {
		if t, err = m.recount(ctx); err != nil {
			return err
		}
	}
	n, b := m.cfg.bounds()
	oldest := append(bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: ref}}}}, sides...)
	for t.Count > int64(n) || t.Bytes > b {
		docs, err := m.find(ctx, oldest, bson.D{{Key: "keptAt", Value: 1}, {Key: "_id", Value: 1}})
		if err != nil {
			return storeErr("finding the oldest sides", err)
		}
		// As many of the oldest as take the totals within the bounds.
		var gone []keptDoc
		count, bytes := t.Count, t.Bytes
		for _, d := range docs {
			if count <= int64(n) && bytes <= b {
				break
			}
			gone = append(gone, d)
			count, bytes = count-1, bytes-d.Size
		}
		if len(gone) == 0 {
			return nil // only the side just kept is left
		}
		if err := m.remove(ctx, gone); err != nil {
			return err
		}
		t.Count, t.Bytes = count, bytes
	}
	return nil
}

// recount counts the sides and their bytes anew, reading every side's
// document without its value, and writes the totals.
func (m *MongoStore) recount(ctx context.Context) (totalsDoc, error) {
	cur, err := m.coll.Find(ctx, sides, options.Find().SetProjection(bson.D{{Key: "size", Value: 1}}))
	if err != nil {
		return totalsDoc{}, storeErr("recounting the sides", err)
	}
	var docs []keptDoc
	if err := cur.All(ctx, &docs); err != nil {
		return totalsDoc{}, storeErr("recounting the sides", err)
	}
	var t totalsDoc
	for _, d := range docs {
		t.Count, t.Bytes = t.Count+1, t.Bytes+d.Size
	}
	_, err = m.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: totalsID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "count", Value: t.Count}, {Key: "bytes", Value: t.Bytes}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		return totalsDoc{}, storeErr("recounting the sides", err)
	}
	return t, nil
}

// Load implements Store.
func (m *MongoStore) Load(ctx context.Context, ref string) (Value, error) {
	var d keptDoc
	err := m.coll.FindOne(ctx, bson.D{{Key: "_id", Value: ref}}).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return Value{}, fmt.Errorf("%w: %q", ErrGone, ref)
	case err != nil:
		return Value{}, storeErr("reading the side", err)
	case !d.Until.After(m.clock.Now()):
		return Value{}, fmt.Errorf("%w: %q is past its time", ErrGone, ref)
	}
	v := Value{Ref: d.ID, Key: d.Key, Found: d.Found, Standing: d.Standing, KeptAt: d.KeptAt, Until: d.Until}
	if !d.Found {
		return v, nil
	}
	v.Entry = kv.Entry{Key: d.Key, Expiration: d.Expiration, Value: []byte{}}
	if d.Metadata != "" {
		v.Entry.Metadata = json.RawMessage(d.Metadata)
	}
	cur, err := m.coll.Find(ctx, bson.D{{Key: "ref", Value: ref}}, options.Find().SetSort(bson.D{{Key: "i", Value: 1}}))
	if err != nil {
		return Value{}, storeErr("reading the value", err)
	}
	defer cur.Close(ctx)
	n := 0
	for ; cur.Next(ctx); n++ {
		var p partDoc
		if err := cur.Decode(&p); err != nil {
			return Value{}, storeErr("reading the value", err)
		}
		if p.I != n {
			break
		}
		v.Entry.Value = append(v.Entry.Value, p.Data...)
	}
	if err := cur.Err(); err != nil {
		return Value{}, storeErr("reading the value", err)
	}
	if n != d.Parts {
		return Value{}, fmt.Errorf("%w: %q has %d of its %d parts", ErrGone, ref, n, d.Parts)
	}
	return v, nil
}

// Discard implements Store: the side's document first, so that a Discard
// cut short leaves parts that nothing finds, removed at their time.
func (m *MongoStore) Discard(ctx context.Context, ref string) error {
	var d keptDoc
	err := m.coll.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: ref}}).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
	case err != nil:
		return storeErr("discarding the side", err)
	default:
		if _, err := m.add(ctx, -1, -d.Size, 0); err != nil {
			return err
		}
	}
	if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "ref", Value: ref}}); err != nil {
		return storeErr("discarding the value", err)
	}
	return nil
}
