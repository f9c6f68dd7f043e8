package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The Ledger's collections of a MongoBoard, beside the stage document;
// like it, their names hold a "." so that no module's keys can land there.
const (
	ReportsCollection   = "kvshadow.reports"
	OverflowsCollection = "kvshadow.overflows"
)

var _ Ledger = (*MongoBoard)(nil)

type seenDoc struct {
	ID     string `bson:"id"`
	Growth int64  `bson:"growth"`
}

type runDoc struct {
	ID         string    `bson:"_id"`
	StartedAt  time.Time `bson:"startedAt"`
	FinishedAt time.Time `bson:"finishedAt"`
	Account    string    `bson:"account"`
	Namespace  string    `bson:"namespace"`
	Database   string    `bson:"database"`
	Parity     float64   `bson:"parity"`
	MinParity  float64   `bson:"minParity"`
	Passed     bool      `bson:"passed"`
	Verdict    string    `bson:"verdict"`
	Truth      string    `bson:"truth"`
	Generation int64     `bson:"generation"`
	Overflows  []seenDoc `bson:"overflows"`
}

type overflowDoc struct {
	ID        string    `bson:"_id"`
	Instance  string    `bson:"instance"`
	Namespace string    `bson:"namespace"`
	RaisedAt  time.Time `bson:"raisedAt"`
	Growth    int64     `bson:"growth"`
	ClearedAt time.Time `bson:"clearedAt"`
	ClearedBy string    `bson:"clearedBy"`
}

// RecordReport implements Ledger.
func (b *MongoBoard) RecordReport(ctx context.Context, run ReportRun) error {
	d := runDoc{ID: run.ID, StartedAt: run.StartedAt.UTC(), FinishedAt: run.FinishedAt.UTC(), Account: run.Account, Namespace: run.Namespace,
		Database: run.Database, Parity: run.Parity, MinParity: run.MinParity, Passed: run.Passed, Verdict: run.Verdict, Truth: run.Truth,
		Generation: int64(run.Generation), Overflows: []seenDoc{}}
	for _, s := range run.Overflows {
		d.Overflows = append(d.Overflows, seenDoc{ID: s.ID, Growth: int64(s.Growth)})
	}
	_, err := b.db.Collection(ReportsCollection).InsertOne(ctx, d)
	switch {
	case mongo.IsDuplicateKeyError(err):
		return fmt.Errorf("%w: report run ID %q is taken", ErrConflict, run.ID)
	case err != nil:
		return boardErr("recording the report run", err)
	}
	return nil
}

// Report implements Ledger.
func (b *MongoBoard) Report(ctx context.Context, id string) (ReportRun, error) {
	var d runDoc
	err := b.db.Collection(ReportsCollection).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return ReportRun{}, fmt.Errorf("%w: %q", ErrNoRecord, id)
	}
	if err != nil {
		return ReportRun{}, boardErr("reading the report run", err)
	}
	run := ReportRun{ID: d.ID, StartedAt: d.StartedAt, FinishedAt: d.FinishedAt, Account: d.Account, Namespace: d.Namespace, Database: d.Database,
		Parity: d.Parity, MinParity: d.MinParity, Passed: d.Passed, Verdict: d.Verdict, Truth: d.Truth, Generation: uint64(max(d.Generation, 0))}
	for _, s := range d.Overflows {
		run.Overflows = append(run.Overflows, SeenOverflow{ID: s.ID, Growth: uint64(max(s.Growth, 0))})
	}
	return run, nil
}

func (d overflowDoc) overflow() Overflow {
	return Overflow{ID: d.ID, Instance: d.Instance, Namespace: d.Namespace, RaisedAt: d.RaisedAt, Growth: uint64(max(d.Growth, 0)),
		ClearedAt: d.ClearedAt, ClearedBy: d.ClearedBy}
}

func (b *MongoBoard) overflows(ctx context.Context, filter bson.D, opts ...options.Lister[options.FindOptions]) ([]Overflow, error) {
	docs, err := findAll[overflowDoc](ctx, b.db.Collection(OverflowsCollection), filter, "reading the overflows", opts...)
	if err != nil {
		return nil, err
	}
	out := make([]Overflow, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.overflow())
	}
	return out, nil
}

// OpenOverflows implements Ledger.
func (b *MongoBoard) OpenOverflows(ctx context.Context, namespace string) ([]Overflow, error) {
	return b.overflows(ctx, bson.D{{Key: "namespace", Value: namespace}, {Key: "clearedBy", Value: ""}},
		options.Find().SetSort(bson.D{{Key: "raisedAt", Value: 1}}))
}

// LastOverflow implements Ledger.
func (b *MongoBoard) LastOverflow(ctx context.Context, instance, namespace string) (Overflow, bool, error) {
	got, err := b.overflows(ctx, bson.D{{Key: "instance", Value: instance}, {Key: "namespace", Value: namespace}},
		options.Find().SetSort(bson.D{{Key: "raisedAt", Value: -1}, {Key: "_id", Value: -1}}).SetLimit(1))
	if err != nil || len(got) == 0 {
		return Overflow{}, false, err
	}
	return got[0], true, nil
}

// SaveOverflow implements Ledger.
func (b *MongoBoard) SaveOverflow(ctx context.Context, o Overflow) error {
	d := overflowDoc{ID: o.ID, Instance: o.Instance, Namespace: o.Namespace, RaisedAt: o.RaisedAt.UTC(), Growth: int64(o.Growth),
		ClearedAt: o.ClearedAt.UTC(), ClearedBy: o.ClearedBy}
	if _, err := b.db.Collection(OverflowsCollection).ReplaceOne(ctx, bson.D{{Key: "_id", Value: o.ID}}, d, options.Replace().SetUpsert(true)); err != nil {
		return boardErr("writing the overflow", err)
	}
	return nil
}
