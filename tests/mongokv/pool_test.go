package mongokv_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
)

// The connection counts come from the driver's own pool events: while the
// client is connected it holds connections open, none stays checked out
// once the operations have returned, and Close closes every one of them
// (what MongoDB Atlas counts against its connection cap).
func TestPoolCountsTheDriversConnections(t *testing.T) {
	pool := &mongokv.Pool{}
	c, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI(), Options: pool.Watch(nil)})
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t, c, mongokv.Config{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				if err := st.Put(ctx, fmt.Sprintf("wordle:%d-%d", g, i), []byte("v"), kv.PutOptions{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if s := pool.Stats(); s.Open < 1 || s.InUse != 0 {
		t.Fatalf("after the writes: %+v, want connections open and none in use", s)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.Open != 0 || s.InUse != 0 {
		t.Fatalf("after Close: %+v, want none", s)
	}
}
