package proxy_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// A heartbeat carries the handover fence through MongoDB, so that a flip on
// one instance waits for another's; a heartbeat written by an older
// version, without those fields, reads as a clear fence.
func TestHeartbeatsCarryTheFence(t *testing.T) {
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database(mongotest.NewDatabaseName(t.Name()))
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
