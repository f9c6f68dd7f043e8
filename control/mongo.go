package control

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// The collections of a MongoBoard. Their names hold a ".", which no
// module's collection can (see backends/mongokv), so neither is ever taken
// for a module's keys.
const (
	ControlCollection   = "kvshadow.control"
	InstancesCollection = "kvshadow.instances"
	// ClaimsCollection holds one document a difference reported (see
	// Claimer): its _id a hex SHA-256 of the key and both sides' states.
	ClaimsCollection = "kvshadow.claims"
	// controlID is the _id of the one control Document.
	controlID = "stage"
)

// MongoBoard is a Board in a MongoDB database: the Document is one document
// of ControlCollection, each heartbeat one document of InstancesCollection.
type MongoBoard struct {
	db *mongo.Database
}

var (
	_ Board   = (*MongoBoard)(nil)
	_ Claimer = (*MongoBoard)(nil)
)

// NewMongoBoard returns a Board in db.
func NewMongoBoard(db *mongo.Database) *MongoBoard {
	return &MongoBoard{db: db}
}

type controlDoc struct {
	ID         string    `bson:"_id"`
	Stage      string    `bson:"stage"`
	Generation int64     `bson:"generation"`
	UpdatedAt  time.Time `bson:"updatedAt"`
	UpdatedBy  string    `bson:"updatedBy"`
	Pairing    Pairing   `bson:"pairing"`
}

type beatDoc struct {
	ID                   string    `bson:"_id"`
	Generation           int64     `bson:"generation"`
	Stage                string    `bson:"stage"`
	At                   time.Time `bson:"at"`
	Drained              bool      `bson:"drained"`
	Dirty                int64     `bson:"dirty"`
	Unsettled            int64     `bson:"unsettled"`
	ReconciliationNeeded bool      `bson:"reconciliationNeeded"`
	Draining             bool      `bson:"draining"`
	Stopped              bool      `bson:"stopped"`
	Lag                  string    `bson:"lag,omitempty"`
	// The fence's fields; absent from the heartbeats of older versions,
	// which read as a clear fence.
	QuietUntil       time.Time `bson:"quietUntil,omitempty"`
	IngestUnverified int64     `bson:"ingestUnverified,omitempty"`
	FenceRemainingMS int64     `bson:"fenceRemainingMs,omitempty"`
	ComparePending   bool      `bson:"comparePending,omitempty"`
	StageKey         string    `bson:"stageKey,omitempty"`
	// The watermarks, one a namespace; absent from the heartbeats of
	// older versions, which then hold no other instance back.
	Watermarks []markDoc `bson:"watermarks,omitempty"`
}

type markDoc struct {
	Namespace string    `bson:"ns"`
	At        time.Time `bson:"at"`
}

type claimDoc struct {
	ID       string    `bson:"_id"`
	At       time.Time `bson:"at"`
	Instance string    `bson:"instance"`
}

func boardErr(what string, err error) error {
	return &mongoError{msg: fmt.Sprintf("%v: %s: %s", ErrBoard, what, mongokv.ShortTopology(err.Error())), errs: []error{ErrBoard, err}}
}

// mongoError is a Board failure worded in one line (the driver's topology
// description shortened to its cause) that still matches ErrBoard and the
// driver's error.
type mongoError struct {
	msg  string
	errs []error
}

func (e *mongoError) Error() string   { return e.msg }
func (e *mongoError) Unwrap() []error { return e.errs }

// Load implements Board: the stage document, carried forward along the
// claims after it (a winner that stopped between its claim and its write
// of the stage document, or a late writer, is read as the claims say).
func (b *MongoBoard) Load(ctx context.Context) (Document, error) {
	coll := b.db.Collection(ControlCollection)
	var d controlDoc
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: controlID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return Document{}, nil
	}
	if err != nil {
		return Document{}, boardErr("reading the stage document", err)
	}
	for range maxCarry {
		claim, ok, err := b.claim(ctx, d.Generation+1)
		if err != nil {
			return Document{}, err
		}
		if !ok {
			break
		}
		b.carry(ctx, claim)
		d = claim
	}
	return d.document()
}

// maxCarry bounds how many claims Load follows past the stage document: a
// stage document that far behind is not written by this version.
const maxCarry = 64

// document is the Document of d, or ErrBoard when d is malformed.
func (d controlDoc) document() (Document, error) {
	stage, err := dualwrite.ParseStage(d.Stage)
	if err != nil || d.Generation < 1 {
		return Document{}, fmt.Errorf("%w: the stage document is malformed (stage %q, generation %d)", ErrBoard, d.Stage, d.Generation)
	}
	return Document{Stage: stage, Generation: uint64(d.Generation), UpdatedAt: d.UpdatedAt, UpdatedBy: d.UpdatedBy, Pairing: d.Pairing}, nil
}

// claimID is the _id of the claim of generation g.
func claimID(g int64) string { return fmt.Sprintf("%s:%d", controlID, g) }

// claim reads the claim of generation g; false when there is none.
func (b *MongoBoard) claim(ctx context.Context, g int64) (controlDoc, bool, error) {
	var c controlDoc
	err := b.db.Collection(ControlCollection).FindOne(ctx, bson.D{{Key: "_id", Value: claimID(g)}}).Decode(&c)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return controlDoc{}, false, nil
	case err != nil:
		return controlDoc{}, false, boardErr("reading the claim of generation "+fmt.Sprint(g), err)
	}
	return c, true, nil
}

// carry writes claim c as the stage document unless that holds its
// generation or a later one already; what fails or comes late, the next
// Load carries forward again.
func (b *MongoBoard) carry(ctx context.Context, c controlDoc) {
	c.ID = controlID
	_, _ = b.db.Collection(ControlCollection).ReplaceOne(ctx,
		bson.D{{Key: "_id", Value: controlID}, {Key: "generation", Value: bson.D{{Key: "$lt", Value: c.Generation}}}}, c)
}

// Swap implements Board: an insert of the stage document when expect is 0,
// else of the claim of generation expect+1 ("stage:N", see the package
// doc), then the stage document written as the claim says; a loser is
// told the winner's stage.
func (b *MongoBoard) Swap(ctx context.Context, expect uint64, next Document) error {
	if next.Generation != expect+1 {
		return fmt.Errorf("%w: generation %d follows %d, not %d", ErrConflict, expect+1, expect, next.Generation)
	}
	coll := b.db.Collection(ControlCollection)
	d := controlDoc{ID: controlID, Stage: next.Stage.String(), Generation: int64(next.Generation), UpdatedAt: next.UpdatedAt.UTC(), UpdatedBy: next.UpdatedBy, Pairing: next.Pairing}
	if expect == 0 {
		_, err := coll.InsertOne(ctx, d)
		switch {
		case mongo.IsDuplicateKeyError(err):
			return fmt.Errorf("%w: a stage document exists already", ErrConflict)
		case err != nil:
			return boardErr("writing the stage document", err)
		}
		return nil
	}
	cur, err := b.Load(ctx)
	if err != nil {
		return err
	}
	if cur.Generation != expect {
		return fmt.Errorf("%w: generation %d is no longer current: %s", ErrConflict, expect, cur.describe())
	}
	claim := d
	claim.ID = claimID(d.Generation)
	_, err = coll.InsertOne(ctx, claim)
	switch {
	case mongo.IsDuplicateKeyError(err):
		won, ok, rerr := b.claim(ctx, d.Generation)
		if rerr != nil || !ok {
			return fmt.Errorf("%w: generation %d was taken by another change", ErrConflict, d.Generation)
		}
		b.carry(ctx, won)
		doc, derr := won.document()
		if derr != nil {
			return derr
		}
		return fmt.Errorf("%w: generation %d was taken by another change: %s", ErrConflict, d.Generation, doc.describe())
	case err != nil:
		return boardErr("claiming generation "+fmt.Sprint(d.Generation), err)
	}
	b.carry(ctx, claim)
	return nil
}

// Beat implements Board.
func (b *MongoBoard) Beat(ctx context.Context, h Heartbeat) error {
	d := beatDoc{
		ID: h.Instance, Generation: int64(h.Generation), Stage: h.Stage.String(), At: h.At.UTC(),
		Drained: h.Drained, Dirty: int64(h.Dirty), Unsettled: int64(h.Unsettled), ReconciliationNeeded: h.ReconciliationNeeded,
		Draining: h.Draining, Stopped: h.Stopped, Lag: h.Lag,
		QuietUntil: h.QuietUntil.UTC(), IngestUnverified: int64(h.IngestUnverified), FenceRemainingMS: h.FenceRemaining.Milliseconds(),
		ComparePending: h.ComparePending, StageKey: h.StageKey,
	}
	for ns, at := range h.Watermarks {
		d.Watermarks = append(d.Watermarks, markDoc{Namespace: ns, At: at.UTC()})
	}
	coll := b.db.Collection(InstancesCollection)
	replace := func() error {
		_, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: h.Instance}}, d, options.Replace().SetUpsert(true))
		return err
	}
	err := replace()
	if mongo.IsDuplicateKeyError(err) {
		// Two upserts of one new _id can race (MongoDB retries such an
		// upsert once; FerretDB does not).
		err = replace()
	}
	if err != nil {
		return boardErr("writing the heartbeat", err)
	}
	return nil
}

// Instances implements Board, in instance order.
func (b *MongoBoard) Instances(ctx context.Context) ([]Heartbeat, error) {
	docs, err := findAll[beatDoc](ctx, b.db.Collection(InstancesCollection), bson.D{}, "reading the heartbeats", options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	out := make([]Heartbeat, 0, len(docs))
	for _, d := range docs {
		stage, err := dualwrite.ParseStage(d.Stage)
		if err != nil {
			return nil, fmt.Errorf("%w: the heartbeat of %q is malformed: %w", ErrBoard, d.ID, err)
		}
		h := Heartbeat{
			Instance: d.ID, Generation: uint64(max(d.Generation, 0)), Stage: stage, At: d.At,
			Drained: d.Drained, Dirty: int(d.Dirty), Unsettled: int(d.Unsettled), ReconciliationNeeded: d.ReconciliationNeeded,
			Draining: d.Draining, Stopped: d.Stopped, Lag: d.Lag,
			QuietUntil: d.QuietUntil, IngestUnverified: int(max(d.IngestUnverified, 0)), FenceRemaining: time.Duration(max(d.FenceRemainingMS, 0)) * time.Millisecond,
			ComparePending: d.ComparePending, StageKey: d.StageKey,
		}
		if len(d.Watermarks) > 0 {
			h.Watermarks = make(map[string]time.Time, len(d.Watermarks))
			for _, m := range d.Watermarks {
				h.Watermarks[m.Namespace] = m.At
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// findAll decodes every document of coll that filter matches.
func findAll[D any](ctx context.Context, coll *mongo.Collection, filter bson.D, what string, opts ...options.Lister[options.FindOptions]) ([]D, error) {
	cur, err := coll.Find(ctx, filter, opts...)
	if err != nil {
		return nil, boardErr(what, err)
	}
	var docs []D
	if err := cur.All(ctx, &docs); err != nil {
		return nil, boardErr(what, err)
	}
	return docs, nil
}

// Claim implements Claimer: one request, an upsert of the difference's
// document filtered on a claim older than hold, which the server refuses
// as a duplicate _id while a newer claim stands.
func (b *MongoBoard) Claim(ctx context.Context, id [32]byte, instance string, at time.Time, hold time.Duration) (bool, error) {
	hexID := hex.EncodeToString(id[:])
	filter := bson.D{{Key: "_id", Value: hexID}, {Key: "at", Value: bson.D{{Key: "$lte", Value: at.Add(-hold).UTC()}}}}
	_, err := b.db.Collection(ClaimsCollection).ReplaceOne(ctx, filter, claimDoc{ID: hexID, At: at.UTC(), Instance: instance}, options.Replace().SetUpsert(true))
	switch {
	case mongo.IsDuplicateKeyError(err):
		return false, nil
	case err != nil:
		return false, boardErr("claiming a difference", err)
	}
	return true, nil
}

// Forget implements Board.
func (b *MongoBoard) Forget(ctx context.Context, instance string) error {
	if _, err := b.db.Collection(InstancesCollection).DeleteOne(ctx, bson.D{{Key: "_id", Value: instance}}); err != nil {
		return boardErr("removing the heartbeat", err)
	}
	return nil
}
