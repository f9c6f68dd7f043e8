package keep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// MongoStore is a Store in KeptCollection. Each Keep removes the sides past
// their time, so that the collection needs no TTL index (which not every
// MongoDB-compatible server honours).
type MongoStore struct {
	coll  *mongo.Collection
	cfg   Config
	clock clock.Clock
}

var _ Store = (*MongoStore)(nil)

// NewMongoStore returns the MongoStore in db's KeptCollection.
func NewMongoStore(db *mongo.Database, cfg Config) *MongoStore {
	return &MongoStore{coll: db.Collection(KeptCollection), cfg: cfg, clock: clock.OrReal(cfg.Clock)}
}

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
// last, so that a side that Load finds is whole.
func (m *MongoStore) Keep(ctx context.Context, k dualwrite.Kept) (string, error) {
	now := m.clock.Now()
	v, err := valueOf(k, control.NewID(), now, m.cfg.keepFor())
	if err != nil {
		return "", err
	}
	if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "until", Value: bson.D{{Key: "$lte", Value: now}}}}); err != nil {
		return "", storeErr("removing the sides past their time", err)
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
	_ = m.bound(ctx)
	return v.Ref, nil
}

// bound removes the oldest sides past MaxKept and MaxKeptBytes. It reads
// every side's document, without its value: at most MaxKept small ones, at
// each Keep, which only a late copy that conflicts makes.
func (m *MongoStore) bound(ctx context.Context) error {
	cur, err := m.coll.Find(ctx, bson.D{{Key: "parts", Value: bson.D{{Key: "$exists", Value: true}}}},
		options.Find().SetSort(bson.D{{Key: "keptAt", Value: -1}, {Key: "_id", Value: -1}}).
			SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "size", Value: 1}}))
	if err != nil {
		return storeErr("reading the sides", err)
	}
	var docs []keptDoc
	if err := cur.All(ctx, &docs); err != nil {
		return storeErr("reading the sides", err)
	}
	sides := make([]sized, len(docs))
	for i, d := range docs {
		sides[i] = sized{ref: d.ID, size: d.Size}
	}
	n, b := m.cfg.bounds()
	refs := past(sides, n, b)
	if len(refs) == 0 {
		return nil
	}
	if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: refs}}}}); err != nil {
		return storeErr("removing the sides past the bounds", err)
	}
	if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "ref", Value: bson.D{{Key: "$in", Value: refs}}}}); err != nil {
		return storeErr("removing the values past the bounds", err)
	}
	return nil
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
	if _, err := m.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: ref}}); err != nil {
		return storeErr("discarding the side", err)
	}
	if _, err := m.coll.DeleteMany(ctx, bson.D{{Key: "ref", Value: ref}}); err != nil {
		return storeErr("discarding the value", err)
	}
	return nil
}
