package control

import (
	"context"
	"errors"
	"fmt"
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
	Kept        string    `bson:"kept,omitempty"`
	KeepError   string    `bson:"keepError,omitempty"`
}

// DecisionsCollection holds the decisions of a MongoBoard's ConflictRecords,
// one document each under the record's ID.
const DecisionsCollection = "kvshadow.decisions"

// decisionDoc is a Decision, with its record's namespace and time, by which
// the records past the limit are removed with their decisions.
type decisionDoc struct {
	ID          string    `bson:"_id"`
	KVNamespace string    `bson:"kvNamespace"`
	Received    time.Time `bson:"received"`
	Keep        string    `bson:"keep"`
	Restored    bool      `bson:"restored"`
	Forced      bool      `bson:"forced,omitempty"`
	At          time.Time `bson:"at"`
	Instance    string    `bson:"instance"`
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
		Received: utc(c.Received), PeersUntil: utc(c.PeersUntil), Error: c.Error, Kept: c.Kept, KeepError: c.KeepError}
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
	past := bson.D{{Key: "kvNamespace", Value: c.KVNamespace}, {Key: "received", Value: bson.D{{Key: "$lte", Value: edge.Received}}}}
	if _, err := coll.DeleteMany(ctx, past); err != nil {
		return boardErr("removing the conflicts past the limit", err)
	}
	if _, err := b.db.Collection(DecisionsCollection).DeleteMany(ctx, past); err != nil {
		return boardErr("removing the decisions past the limit", err)
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
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.record())
		ids = append(ids, d.ID)
	}
	decided, err := b.decisions(ctx, ids)
	if err != nil {
		return nil, 0, err
	}
	for i := range out {
		out[i].Decision = decided[out[i].ID]
	}
	return out, total, nil
}

// record is the ConflictRecord of d, without its decision (decisions).
func (d conflictDoc) record() ConflictRecord {
	return ConflictRecord{ID: d.ID, Instance: d.Instance, KVNamespace: d.KVNamespace, Conflict: dualwrite.Conflict{
		Namespace: d.Namespace, Key: d.Key, Outcome: dualwrite.LateOutcome(d.Outcome), Copy: d.Copy.digest(), Shadow: d.Shadow.digest(),
		AckedAt: d.AckedAt, LastWrite: d.LastWrite, Received: d.Received, PeersUntil: d.PeersUntil, Error: d.Error,
		Kept: d.Kept, KeepError: d.KeepError}}
}

// Conflict implements ConflictLedger.
func (b *MongoBoard) Conflict(ctx context.Context, id string) (ConflictRecord, error) {
	var d conflictDoc
	err := b.db.Collection(ConflictsCollection).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return ConflictRecord{}, fmt.Errorf("%w: %q", ErrNoConflict, id)
	case err != nil:
		return ConflictRecord{}, boardErr("reading the conflict", err)
	}
	rec := d.record()
	decided, err := b.decisions(ctx, []string{id})
	if err != nil {
		return ConflictRecord{}, err
	}
	rec.Decision = decided[id]
	return rec, nil
}

// Decide implements ConflictLedger. A decision is a document of its own,
// in DecisionsCollection under the record's ID, so that of two decisions at
// once the server's unique _id takes exactly one (a conditional update is
// not atomic on every MongoDB-compatible server).
func (b *MongoBoard) Decide(ctx context.Context, id string, dec Decision) error {
	rec, err := b.Conflict(ctx, id)
	if err != nil {
		return err
	}
	if rec.Decision != nil {
		return fmt.Errorf("%w: %q", ErrDecided, id)
	}
	doc := decisionDoc{ID: id, KVNamespace: rec.KVNamespace, Received: utc(rec.Received),
		Keep: dec.Keep, Restored: dec.Restored, Forced: dec.Forced, At: utc(dec.At), Instance: dec.Instance}
	_, err = b.db.Collection(DecisionsCollection).InsertOne(ctx, doc)
	switch {
	case mongo.IsDuplicateKeyError(err):
		return fmt.Errorf("%w: %q", ErrDecided, id)
	case err != nil:
		return boardErr("recording the decision", err)
	}
	return nil
}

// decisions returns the decisions of the records ids, by ID.
func (b *MongoBoard) decisions(ctx context.Context, ids []string) (map[string]*Decision, error) {
	docs, err := findAll[decisionDoc](ctx, b.db.Collection(DecisionsCollection),
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, "reading the decisions")
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Decision, len(docs))
	for _, d := range docs {
		out[d.ID] = &Decision{Keep: d.Keep, Restored: d.Restored, Forced: d.Forced, At: d.At, Instance: d.Instance}
	}
	return out, nil
}

// Undecided implements ConflictLedger: the namespace's records less its
// decisions, which are removed with their records.
func (b *MongoBoard) Undecided(ctx context.Context, kvNamespace string) (int64, error) {
	ns := bson.D{{Key: "kvNamespace", Value: kvNamespace}}
	total, err := b.db.Collection(ConflictsCollection).CountDocuments(ctx, ns)
	if err != nil {
		return 0, boardErr("counting the conflicts", err)
	}
	decided, err := b.db.Collection(DecisionsCollection).CountDocuments(ctx, ns)
	if err != nil {
		return 0, boardErr("counting the decisions", err)
	}
	return max(total-decided, 0), nil
}
