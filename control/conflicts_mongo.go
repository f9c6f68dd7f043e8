package control

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// ConflictsCollection holds a MongoBoard's ConflictRecords.
const ConflictsCollection = "kvshadow.conflicts"

type digestDoc struct {
	Present    bool      `bson:"present"`
	Length     int64     `bson:"length"`
	Hash       string    `bson:"hash,omitempty"`
	Expiration time.Time `bson:"expiration,omitempty"`
	Metadata   string    `bson:"metadata,omitempty"`
}

type conflictDoc struct {
	ID          string    `bson:"_id"`
	Instance    string    `bson:"instance"`
	KVNamespace string    `bson:"kvNamespace"`
	Namespace   string    `bson:"namespace"`
	Key         string    `bson:"key"`
	Outcome     string    `bson:"outcome"`
	Copy        digestDoc `bson:"copy"`
	Shadow      digestDoc `bson:"shadow"`
	AckedAt     time.Time `bson:"ackedAt"`
	LastWrite   time.Time `bson:"lastWrite,omitempty"`
	Received    time.Time `bson:"received"`
	PeersUntil  time.Time `bson:"peersUntil,omitempty"`
	Error       string    `bson:"error,omitempty"`
}

func docOfDigest(d compare.Digest) digestDoc {
	return digestDoc{Present: d.Present, Length: int64(d.Length), Hash: d.Hash, Expiration: utc(d.Expiration), Metadata: d.Metadata}
}

func (d digestDoc) digest() compare.Digest {
	return compare.Digest{Present: d.Present, Length: int(d.Length), Hash: d.Hash, Expiration: d.Expiration, Metadata: d.Metadata}
}

// utc is t in UTC, as MongoDB gives times back; a zero time stays zero,
// and is omitted.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// RecordConflict implements ConflictLedger. Past the board's limit for
// its Workers KV namespace (MaxConflictRecords unless SetConflictLimit),
// the oldest go.
func (b *MongoBoard) RecordConflict(ctx context.Context, c ConflictRecord) error {
	d := conflictDoc{ID: c.ID, Instance: c.Instance, KVNamespace: c.KVNamespace, Namespace: c.Namespace, Key: c.Key, Outcome: string(c.Outcome),
		Copy: docOfDigest(c.Copy), Shadow: docOfDigest(c.Shadow), AckedAt: utc(c.AckedAt), LastWrite: utc(c.LastWrite),
		Received: utc(c.Received), PeersUntil: utc(c.PeersUntil), Error: c.Error}
	coll := b.db.Collection(ConflictsCollection)
	_, err := coll.InsertOne(ctx, d)
	switch {
	case mongo.IsDuplicateKeyError(err):
		return boardErr("recording the conflict", ErrConflict)
	case err != nil:
		return boardErr("recording the conflict", err)
	}
	ns := bson.D{{Key: "kvNamespace", Value: c.KVNamespace}}
	n, err := coll.CountDocuments(ctx, ns)
	if err != nil {
		return boardErr("counting the conflicts", err)
	}
	if n <= b.conflictLimit {
		return nil
	}
	// The newest record past the limit, and every one older than it.
	var edge conflictDoc
	err = coll.FindOne(ctx, ns, options.FindOne().SetSort(bson.D{{Key: "received", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(b.conflictLimit)).Decode(&edge)
	if err != nil {
		return boardErr("finding the conflicts past the limit", err)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "kvNamespace", Value: c.KVNamespace}, {Key: "received", Value: bson.D{{Key: "$lte", Value: edge.Received}}}}); err != nil {
		return boardErr("removing the conflicts past the limit", err)
	}
	return nil
}

// Conflicts implements ConflictLedger.
func (b *MongoBoard) Conflicts(ctx context.Context, kvNamespace string, limit int) ([]ConflictRecord, int64, error) {
	coll := b.db.Collection(ConflictsCollection)
	ns := bson.D{{Key: "kvNamespace", Value: kvNamespace}}
	total, err := coll.CountDocuments(ctx, ns)
	if err != nil {
		return nil, 0, boardErr("counting the conflicts", err)
	}
	if limit <= 0 || total == 0 {
		return nil, total, nil
	}
	docs, err := findAll[conflictDoc](ctx, coll, ns, "reading the conflicts",
		options.Find().SetSort(bson.D{{Key: "received", Value: -1}, {Key: "_id", Value: -1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, 0, err
	}
	out := make([]ConflictRecord, 0, len(docs))
	for _, d := range docs {
		out = append(out, ConflictRecord{ID: d.ID, Instance: d.Instance, KVNamespace: d.KVNamespace, Conflict: dualwrite.Conflict{
			Namespace: d.Namespace, Key: d.Key, Outcome: dualwrite.LateOutcome(d.Outcome), Copy: d.Copy.digest(), Shadow: d.Shadow.digest(),
			AckedAt: d.AckedAt, LastWrite: d.LastWrite, Received: d.Received, PeersUntil: d.PeersUntil, Error: d.Error}})
	}
	return out, total, nil
}
