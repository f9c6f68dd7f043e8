package proxy_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/control/ledgertest"
	"github.com/kvshadow/kvshadow/dualwrite"
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
