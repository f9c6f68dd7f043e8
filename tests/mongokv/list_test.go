package mongokv_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
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

// TestListAndMetadataReadNoValue: a listing returns each key's expiry and
// metadata (ListResult.Info) from its one find, and a metadata read from its
// one find, bringing neither the value nor a chunk reference: a chunked
// value costs them no chunk read. An expired document that no TTL monitor
// removed is neither listed nor read, and a document the bot wrote (no
// metadata) lists none.
func TestListAndMetadataReadNoValue(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	// Every document a find brings, with the fields that it must not.
	var found, heavy atomic.Int64
	events := &driverEvents{replied: func(command string, reply bson.Raw) {
		batch, ok := reply.Lookup("cursor", "firstBatch").ArrayOK()
		if command != "find" || !ok {
			return
		}
		docs, _ := batch.Values()
		for _, d := range docs {
			found.Add(1)
			for _, f := range []string{"value", "chunks", "data"} {
				if d.Document().Lookup(f).Type != 0 {
					heavy.Add(1)
				}
			}
		}
	}}
	s := newStore(t, newClient(t, mongokv.ClientConfig{Options: events.install}), mongokv.Config{Clock: clk, MaxDocumentSize: smallDocs})
	exp := clk.Now().Add(time.Hour)
	md := json.RawMessage(`{"big":true}`)
	entries := []kv.Entry{
		{Key: "wordle:big", Value: bytes.Repeat([]byte("b"), 3*chunkData), Expiration: exp, Metadata: md},
		{Key: "wordle:small", Value: []byte("s"), Metadata: json.RawMessage(`"small"`)},
		{Key: "wordle:soon", Value: []byte("gone"), Expiration: clk.Now().Add(kv.MinTTL), Metadata: json.RawMessage(`1`)},
	}
	for _, e := range entries {
		if err := s.PutEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rawDB(t, s.Database()).Collection("wordle").InsertOne(ctx, bson.D{{Key: "_id", Value: "wordle:bot"}, {Key: "value", Value: "by the bot"}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(kv.MinTTL) // "wordle:soon" has expired; FerretDB keeps its document
	noValue := func(what string) {
		t.Helper()
		if n := found.Swap(0); n == 0 {
			t.Fatalf("%s: no document seen in a find's reply", what)
		}
		if n := heavy.Swap(0); n != 0 {
			t.Errorf("%s brought %d values or chunk references", what, n)
		}
	}
	events.sent()
	found.Store(0)
	heavy.Store(0)
	res, err := s.List(ctx, kv.ListOptions{Prefix: "wordle:"})
	if err != nil {
		t.Fatal(err)
	}
	if n := events.sent(); n != 1 {
		t.Errorf("a listing of one module cost %d commands, want one find", n)
	}
	noValue("the listing")
	want := []struct {
		key string
		exp time.Time
		md  string
	}{{"wordle:big", exp, string(md)}, {"wordle:bot", time.Time{}, ""}, {"wordle:small", time.Time{}, `"small"`}}
	if len(res.Keys) != len(want) || len(res.Info) != len(want) {
		t.Fatalf("List = %q with %d infos, want %d keys and their infos", res.Keys, len(res.Info), len(want))
	}
	for i, w := range want {
		got := res.Info[i]
		if res.Keys[i] != w.key || !got.Expiration.Equal(w.exp) || string(got.Metadata) != w.md {
			t.Errorf("listed %q expiring %v with metadata %s; want %q expiring %v with %s", res.Keys[i], got.Expiration, got.Metadata, w.key, w.exp, w.md)
		}
	}

	got, err := s.GetMetadata(ctx, "wordle:big")
	if err != nil || string(got) != string(md) {
		t.Fatalf("GetMetadata of a chunked key = %s, %v; want %s", got, err, md)
	}
	if n := events.sent(); n != 1 {
		t.Errorf("a metadata read of a chunked key cost %d commands, want one find", n)
	}
	noValue("the metadata read")
	if got, err := s.GetMetadata(ctx, "wordle:soon"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("GetMetadata of an expired key = %s, %v; want kv.ErrNotFound", got, err)
	}
	if got, err := s.GetMetadata(ctx, "wordle:bot"); err != nil || got != nil {
		t.Errorf("GetMetadata of the bot's document = %s, %v; want none", got, err)
	}
}
