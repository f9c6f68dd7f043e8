package proxy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/service"
)

// rawCollection is a collection of the shadow database, read with the
// driver alone.
func rawCollection(t *testing.T, db, coll string) *mongo.Collection {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c.Database(db).Collection(coll)
}

// The service runs the chunk sweeper of its shadow databases: an expired
// document, which FerretDB's missing TTL monitor never removes, is deleted.
func TestTheServiceSweeps(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	startInProcess(t, em.environment(db), []string{"--stage", "dualwrite", "--sweep-interval", "100ms"})
	ctx := t.Context()
	// The sweeper: an expired document, which FerretDB never removes.
	files := rawCollection(t, db, "files")
	if _, err := files.InsertOne(ctx, bson.D{{Key: "_id", Value: "files:expired"}, {Key: "value", Value: "x"}, {Key: "expiresAt", Value: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the service's sweeper to delete an expired document", func() bool {
		n, err := files.CountDocuments(ctx, bson.D{{Key: "_id", Value: "files:expired"}})
		return err == nil && n == 0
	})
}

// A bulk write of 10,000 keys through the proxy to a shadow slower than
// the writes: its copies wait for room in their lanes, none is dropped,
// and every key reaches the shadow.
func TestBulkWriteToASlowShadowDropsNothing(t *testing.T) {
	em := newEmulator(t, nil)
	slow, err := kvfault.New(memory.New(memory.Config{}), kvfault.Config{Name: "shadow", Latency: 200 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: em.url})
		if err != nil {
			return nil, err
		}
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: primary, Shadow: slow, ShadowSystem: "memory"}}}, nil
	}
	in := startInProcess(t, em.environment("unused"), []string{"--stage", "dualwrite"}, service.WithBackends(open))
	entries := make([]kv.Entry, 10_000)
	for i := range entries {
		entries[i] = kv.Entry{Key: fmt.Sprintf("trading:bulk:%05d", i), Value: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	if err := in.client(t, nil).PutMany(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copies to drain", func() bool { return in.stats(t).Total.Queued == 0 })
	if st := in.stats(t).Total; st.Drops["lane_full"] != 0 || st.Dirty != 0 {
		t.Fatalf("drops %v, %d dirty after a bulk write of 10,000 keys", st.Drops, st.Dirty)
	}
	res, err := slow.Inner().List(t.Context(), kv.ListOptions{Prefix: "trading:bulk:"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.Keys)
	for c := res.Cursor; !res.Done; c = res.Cursor {
		if res, err = slow.Inner().List(t.Context(), kv.ListOptions{Prefix: "trading:bulk:", Cursor: c}); err != nil {
			t.Fatal(err)
		}
		n += len(res.Keys)
	}
	if n != len(entries) {
		t.Fatalf("the shadow holds %d of the %d keys", n, len(entries))
	}
}
