package mongokv_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// listAll pages through prefix and returns every key and the pages it took.
func listAll(t *testing.T, s kv.Store, prefix string, limit int) ([]string, int) {
	t.Helper()
	var keys []string
	cursor := ""
	for pages := 1; ; pages++ {
		res, err := s.List(t.Context(), kv.ListOptions{Prefix: prefix, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("List(%q, %d): %v", prefix, limit, err)
		}
		keys = append(keys, res.Keys...)
		if res.Done {
			return keys, pages
		}
		cursor = res.Cursor
	}
}

// TestListAcrossCollections: a prefix without ":" merges the collections it
// can reach in byte order; another application's documents in a collection
// with a module-like name are not keys.
func TestListAcrossCollections(t *testing.T) {
	ctx := t.Context()
	events := &driverEvents{}
	s := newStore(t, newClient(t, mongokv.ClientConfig{Options: events.install}), mongokv.Config{})
	keys := []string{
		"loldle-emoji:b", "loldle_emoji:a", "loldle:z", "loldle", "loldlex",
		"trades:1", "wordle:1", "wordle:2", "w", "Wordle:x", "é:1", "日本", "_:u", "-:d",
	}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The bot's trades collection: its documents share the name of a
	// module's collection but are not keys of the "trades" module.
	if _, err := rawDB(t, s.Database()).Collection("trades").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "user", Value: 1}},
		bson.D{{Key: "_id", Value: "tradesman"}, {Key: "user", Value: 2}},
		bson.D{{Key: "_id", Value: "order-7"}, {Key: "user", Value: 3}},
	}); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(keys))
	for prefix, want := range map[string][]string{
		"":        sorted,
		"loldle":  {"loldle", "loldle-emoji:b", "loldle:z", "loldle_emoji:a", "loldlex"},
		"loldle-": {"loldle-emoji:b"},
		"loldle_": {"loldle_emoji:a"},
		"trade":   {"trades:1"},
		"w":       {"w", "wordle:1", "wordle:2"},
		"wordle:": {"wordle:1", "wordle:2"},
		"_":       {"_:u"},
		"é":       {"é:1"},
		"x":       nil,
	} {
		for _, limit := range []int{0, 1, 2} {
			got, _ := listAll(t, s, prefix, limit)
			if !slices.Equal(got, want) {
				t.Errorf("List(%q, limit %d) = %q, want %q", prefix, limit, got, want)
			}
		}
	}
	// A module prefix reads one collection: one command a page.
	events.sent()
	events.sent()
	if _, pages := listAll(t, s, "wordle:", 1); events.sent() != pages {
		t.Errorf("a listing of one module took more than one command a page")
	}
}

// TestConcurrentFirstInsert: writers racing to create the same new key all
// succeed (FerretDB fails most such upserts with a duplicate key; the store
// retries once, as an update).
func TestConcurrentFirstInsert(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newClient(t, mongokv.ClientConfig{}), mongokv.Config{})
	if err := s.Put(ctx, "race:warm", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err) // creates the collection and asks for its index
	}
	const rounds, writers = 20, 4
	for r := range rounds {
		key := fmt.Sprintf("race:%d", r)
		var wg sync.WaitGroup
		errs := make(chan error, writers*2)
		for w := range writers {
			wg.Go(func() {
				if err := s.Put(ctx, key, fmt.Appendf(nil, "w%d", w), kv.PutOptions{}); err != nil {
					errs <- err
				}
			})
			wg.Go(func() {
				if err := s.PutMany(ctx, []kv.Entry{{Key: key + ":bulk", Value: []byte("b")}}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: concurrent first insert: %v", r, err)
		}
		if v, err := s.Get(ctx, key); err != nil || len(v) != 2 {
			t.Fatalf("round %d: Get = %q, %v", r, v, err)
		}
	}
}
