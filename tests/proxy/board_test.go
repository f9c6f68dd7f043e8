package proxy_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/control/ledgertest"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/keep"
	"github.com/kvshadow/kvshadow/keep/keeptest"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// A heartbeat carries the handover fence through MongoDB, so that a flip on
// one instance waits for another's; a heartbeat written by an older
// version, without those fields, reads as a clear fence.
func TestHeartbeatsCarryTheFence(t *testing.T) {
	db := testDatabase(t)
	board := control.NewMongoBoard(db)
	at := time.Now().Truncate(time.Millisecond).UTC()
	want := control.Heartbeat{Instance: "a", Generation: 3, Stage: dualwrite.Handover, At: at, Drained: true,
		QuietUntil: at.Add(40 * time.Second), IngestUnverified: 7, FenceRemaining: 65 * time.Second}
	if err := board.Beat(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	old := bson.D{{Key: "_id", Value: "old"}, {Key: "generation", Value: int64(3)}, {Key: "stage", Value: "shadow"}, {Key: "at", Value: at}}
	if _, err := db.Collection(control.InstancesCollection).InsertOne(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	beats, err := board.Instances(t.Context())
	if err != nil || len(beats) != 2 {
		t.Fatalf("Instances = %+v, %v", beats, err)
	}
	got := beats[0]
	if !got.QuietUntil.Equal(want.QuietUntil) || got.IngestUnverified != 7 || got.FenceRemaining != want.FenceRemaining || got.Stage != dualwrite.Handover {
		t.Fatalf("heartbeat read back: %+v", got)
	}
	if o := beats[1]; !o.QuietUntil.IsZero() || o.IngestUnverified != 0 || o.FenceRemaining != 0 {
		t.Fatalf("an older heartbeat: %+v", o)
	}
}

// A conflict record reads back from MongoDB as written, newest first
// within its namespace, an ID twice is refused, and past the board's limit
// the oldest of the namespace go.
func TestConflictRecordsInMongoDB(t *testing.T) {
	board := control.NewMongoBoard(testDatabase(t))
	board.SetConflictLimit(3)
	at := time.Now().Truncate(time.Millisecond).UTC()
	rec := func(i int, ns string) control.ConflictRecord {
		c := control.ConflictRecord{ID: control.NewID(), Instance: "a", KVNamespace: ns}
		c.Conflict = dualwrite.Conflict{Namespace: "wordle", Key: "wordle:#e6cdd21c", Outcome: dualwrite.LateConflict,
			Copy:    compare.Digest{Present: true, Length: 7, Hash: "dfbd8505c8af50f2", Expiration: at.Add(time.Hour)},
			Shadow:  compare.Digest{Present: true, Length: 2, Hash: "da95b47c84acb14d", Metadata: "0a1b"},
			AckedAt: at, LastWrite: at.Add(-time.Minute), Received: at.Add(time.Duration(i) * time.Second), PeersUntil: at.Add(15 * time.Second)}
		return c
	}
	first := rec(0, "wordle")
	if err := board.RecordConflict(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if err := board.RecordConflict(t.Context(), first); !errors.Is(err, control.ErrConflict) {
		t.Fatalf("an ID twice: %v", err)
	}
	got, total, err := board.Conflicts(t.Context(), "wordle", 10)
	if err != nil || total != 1 || len(got) != 1 || !reflect.DeepEqual(got[0], first) {
		t.Fatalf("read back: %+v, %d, %v; want %+v", got, total, err, first)
	}
	if err := board.RecordConflict(t.Context(), rec(0, "other")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		if err := board.RecordConflict(t.Context(), rec(i, "wordle")); err != nil {
			t.Fatal(err)
		}
	}
	got, total, err = board.Conflicts(t.Context(), "wordle", 2)
	if err != nil || total != 3 || len(got) != 2 || !got[0].Received.Equal(at.Add(4*time.Second)) || !got[1].Received.Equal(at.Add(3*time.Second)) {
		t.Fatalf("past the limit: %+v, %d, %v", got, total, err)
	}
	if _, total, err := board.Conflicts(t.Context(), "other", 10); err != nil || total != 1 {
		t.Fatalf("another namespace: %d, %v", total, err)
	}
}

// MongoBoard takes decisions as the memory ledger does: once, one of
// several at once (a conditional update).
func TestConflictDecisionsInMongoDB(t *testing.T) {
	ledgertest.Decisions(t, control.NewMongoBoard(testDatabase(t)))
}

// Of several stage changes of one generation at once, exactly one is
// taken, on the embedded server as on MongoDB (an update filtered on the
// generation matches twice there), round after round; the others are told
// the winner.
func TestStageSwapsInMongoDB(t *testing.T) {
	ledgertest.Swaps(t, control.NewMongoBoard(testDatabase(t)), 8, 25)
}

// Instances that change the stage at once: one is told it changed it, the
// others are told the winner's document, and every one runs the
// document's stage.
func TestStageChangesAtOnceInMongoDB(t *testing.T) {
	ledgertest.SetStages(t, control.NewMongoBoard(testDatabase(t)), 6, 15)
}

// MongoStore keeps late copies' displaced sides as MemoryStore does, a
// value larger than a document split into parts.
func TestKeptSidesInMongoDB(t *testing.T) {
	keeptest.Run(t, true, func(c keep.Config) keep.Store { return keep.NewMongoStore(testDatabase(t), c) })
}

// testDatabase is a database of its own for the test, on the embedded
// server, through a client of its own.
func testDatabase(t *testing.T) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client.Database(mongotest.NewDatabaseName(t.Name()))
}

// A heartbeat carries its stores' watermarks through MongoDB, and a claim
// of a difference is taken once while it holds, by one request each.
func TestWatermarksAndClaimsInMongoDB(t *testing.T) {
	db := testDatabase(t)
	board := control.NewMongoBoard(db)
	at := time.Now().Truncate(time.Millisecond).UTC()
	want := control.Heartbeat{Instance: "a", Stage: dualwrite.Shadow, At: at,
		Watermarks: map[string]time.Time{"ns1": at.Add(-time.Second), "ns2": at}}
	if err := board.Beat(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	beats, err := board.Instances(t.Context())
	if err != nil || len(beats) != 1 || !reflect.DeepEqual(beats[0].Watermarks, want.Watermarks) {
		t.Fatalf("Instances = %+v, %v; want watermarks %v", beats, err, want.Watermarks)
	}
	id := [32]byte{1, 2, 3}
	for i, c := range []struct {
		who   string
		at    time.Time
		first bool
	}{
		{"a", at, true},
		{"b", at.Add(time.Second), false},     // within the hold: reported already
		{"a", at.Add(2 * time.Second), false}, // by anyone
		{"b", at.Add(time.Minute), true},      // past it: reported again
	} {
		first, err := board.Claim(t.Context(), id, c.who, c.at, 10*time.Second)
		if err != nil || first != c.first {
			t.Fatalf("claim %d by %s = %v, %v; want %v", i, c.who, first, err, c.first)
		}
	}
	if first, err := board.Claim(t.Context(), [32]byte{9}, "a", at, 10*time.Second); err != nil || !first {
		t.Fatalf("another difference's claim = %v, %v", first, err)
	}
}

// Keeping a side costs as many requests, reading as many documents, with
// 200 sides kept as with none: the totals are counted, not read from every
// side (as a bound that read every side's document at each Keep did).
func TestKeepingASideCostsTheSameAsSidesGrow(t *testing.T) {
	var requests, docs atomic.Int64
	mon := &event.CommandMonitor{Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		requests.Add(1)
		for _, batch := range []string{"firstBatch", "nextBatch"} {
			if v, err := e.Reply.LookupErr("cursor", batch); err == nil {
				if vals, err := v.Array().Values(); err == nil {
					docs.Add(int64(len(vals)))
				}
			}
		}
	}}
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()).SetMonitor(mon))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	s := keep.NewMongoStore(client.Database(mongotest.NewDatabaseName(t.Name())), keep.Config{Rate: -1})
	const sides, sample = 120, 30
	cost := func() (req, read int64) {
		r0, d0 := requests.Load(), docs.Load()
		ref, err := s.Keep(t.Context(), dualwrite.Kept{Key: "wordle:k", Displaced: compare.Observation{Found: true, Value: []byte("binding")}})
		if err != nil || ref == "" {
			t.Fatalf("Keep: %q, %v", ref, err)
		}
		return requests.Load() - r0, docs.Load() - d0
	}
	var first, last [2]int64
	for i := range sides {
		req, read := cost()
		switch {
		case i > 0 && i <= sample: // the first Keep creates the indexes
			first[0], first[1] = first[0]+req, first[1]+read
		case i >= sides-sample:
			last[0], last[1] = last[0]+req, last[1]+read
		}
	}
	t.Logf("per Keep, with up to %d sides kept: %.1f requests, %.1f documents read; with %d: %.1f requests, %.1f documents read",
		sample, float64(first[0])/sample, float64(first[1])/sample, sides, float64(last[0])/sample, float64(last[1])/sample)
	if last[0] > first[0] || last[1] > first[1] {
		t.Fatalf("a Keep costs more as sides grow: %d requests and %d documents read for %d Keeps at first, %d and %d at %d sides",
			first[0], first[1], sample, last[0], last[1], sides)
	}
}
