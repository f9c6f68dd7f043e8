package mongokv_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestTTLIndexOncePerCollection: the TTL index is asked for once per
// collection and client, however many writes and Stores; a server that
// cannot build it is said so once.
func TestTTLIndexOncePerCollection(t *testing.T) {
	ctx := t.Context()
	events := &driverEvents{}
	logs := &logSink{}
	c := newClient(t, mongokv.ClientConfig{Logger: slog.New(logs), Options: events.install})
	s := newStore(t, c, mongokv.Config{})
	for _, k := range []string{"wordle:a", "wordle:b", "trading:x", "wordle:c", "plain"} {
		if err := s.Put(ctx, k, []byte("v"), kv.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	same, err := c.Store(mongokv.Config{Database: s.Database()})
	if err != nil {
		t.Fatal(err)
	}
	if err := same.PutMany(ctx, []kv.Entry{{Key: "wordle:d", Value: []byte("v")}, {Key: "trading:y", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if got := events.sent("createIndexes"); got != 3 {
		t.Errorf("createIndexes sent %d times, want 3 (wordle, trading, the default collection)", got)
	}
	if c.TTLIndexUnsupported() {
		if n := logs.count("cannot build TTL indexes"); n != 1 {
			t.Errorf("the missing TTL index was logged %d times, want once", n)
		}
		return
	}
	// A server with TTL indexes has the bot's own: {expiresAt: 1},
	// expireAfterSeconds 0, sparse.
	cur, err := rawDB(t, s.Database()).Collection("wordle").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.M
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, spec := range specs {
		if spec["name"] == "expiresAt_1" {
			found = spec["expireAfterSeconds"] != nil && spec["sparse"] == true
		}
	}
	if !found {
		t.Errorf("indexes = %v, want expiresAt_1 with expireAfterSeconds 0, sparse", specs)
	}
}

// TestSweep deletes expired documents of the store's collections only.
func TestSweep(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	db := rawDB(t, s.Database())
	for k, ttl := range map[string]time.Duration{"wordle:short": time.Minute, "wordle:long": time.Hour, "wordle:none": 0, "plain:short": time.Minute, "loldle-emoji:short": time.Minute} {
		if err := s.Put(ctx, k, []byte("v"), kv.PutOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 3*chunkData)
	if err := s.Put(ctx, "wordle:big", big, kv.PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Another application's collection whose name looks like a module's,
	// with an expiresAt field of its own: not ours to delete.
	past := clk.Now().Add(-time.Hour)
	if _, err := db.Collection("trades").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "expiresAt", Value: past}},
		bson.D{{Key: "_id", Value: "order-1"}, {Key: "expiresAt", Value: past}},
	}); err != nil {
		t.Fatal(err)
	}

	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep before anything expired = %d, %v", n, err)
	}
	clk.Advance(2 * time.Minute)
	n, err := s.Sweep(ctx)
	if err != nil || n != 3+1+3+1 {
		t.Fatalf("Sweep = %d, %v; want 3 expired keys, a chunked key, its 3 chunks and its generation", n, err)
	}
	if got := rawCount(t, db, "wordle", nil); got != 2 {
		t.Errorf("wordle holds %d documents after the sweep, want 2", got)
	}
	if got := rawCount(t, db, mongokv.ChunkCollection, nil) + rawCount(t, db, mongokv.GenerationCollection, nil); got != 0 {
		t.Errorf("%d chunks and generations left after their key expired", got)
	}
	if got := rawCount(t, db, "trades", nil); got != 2 {
		t.Errorf("the sweep deleted %d documents of another application", 2-got)
	}
}

// TestRunSweeper sweeps on its clock's ticks and stops with its context.
func TestRunSweeper(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk})
	db := rawDB(t, s.Database())
	if err := s.Put(ctx, "wordle:short", []byte("v"), kv.PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.RunSweeper(runCtx, 30*time.Second) }()

	parked := func() { // the sweeper waits on its next tick
		for clk.Timers() != 1 {
			runtime.Gosched()
		}
	}
	parked()
	clk.Advance(30 * time.Second) // a tick before the expiry: nothing to do
	parked()
	if got := rawCount(t, db, "wordle", nil); got != 1 {
		t.Fatalf("%d documents after a sweep before expiry, want 1", got)
	}
	clk.Advance(31 * time.Second)
	// The next timer is made only after the sweep returned.
	parked()
	if got := rawCount(t, db, "wordle", nil); got != 0 {
		t.Errorf("%d documents after a sweep past expiry, want 0", got)
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RunSweeper = %v, want context.Canceled", err)
	}
}

// TestExpiryFilterIsReadTime: a document past its expiry is invisible to
// every read even though nothing has deleted it (FerretDB never will; MongoDB
// takes up to a minute).
func TestExpiryFilterIsReadTime(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{Clock: clk})
	if err := s.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if got := rawCount(t, rawDB(t, s.Database()), "wordle", nil); got != 1 {
		t.Fatalf("the expired document is already gone (%d): the test proves nothing", got)
	}
	if _, err := s.Get(ctx, "wordle:k"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("Get = %v", err)
	}
	if got, err := s.GetMany(ctx, []string{"wordle:k"}); err != nil || len(got) != 0 {
		t.Errorf("GetMany = %d entries, %v", len(got), err)
	}
	for _, prefix := range []string{"", "wordle:", "w"} {
		if res, err := s.List(ctx, kv.ListOptions{Prefix: prefix}); err != nil || len(res.Keys) != 0 || !res.Done {
			t.Errorf("List(%q) = %q, %v", prefix, res.Keys, err)
		}
	}
}
