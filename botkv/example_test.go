package botkv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/dualwrite"
)

// The bot's own store package, unchanged: the interface its modules use,
// its sentinel (compared with ==) and its module wrapper.
type KVStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	GetJSON(ctx context.Context, key string, dst any) error
	Put(ctx context.Context, key string, val []byte) error
	PutJSON(ctx context.Context, key string, val any) error
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]string, error)
}

var ErrNotFound = errors.New("storage: key not found")

type prefixed struct {
	inner  KVStore
	prefix string
}

func Prefixed(inner KVStore, module string) KVStore { return prefixed{inner, module + ":"} }

func (p prefixed) Get(ctx context.Context, k string) ([]byte, error) {
	return p.inner.Get(ctx, p.prefix+k)
}
func (p prefixed) GetJSON(ctx context.Context, k string, dst any) error {
	return p.inner.GetJSON(ctx, p.prefix+k, dst)
}
func (p prefixed) Put(ctx context.Context, k string, v []byte) error {
	return p.inner.Put(ctx, p.prefix+k, v)
}
func (p prefixed) PutJSON(ctx context.Context, k string, v any) error {
	return p.inner.PutJSON(ctx, p.prefix+k, v)
}
func (p prefixed) Delete(ctx context.Context, k string) error { return p.inner.Delete(ctx, p.prefix+k) }
func (p prefixed) List(ctx context.Context, prefix string) ([]string, error) {
	keys, err := p.inner.List(ctx, p.prefix+prefix)
	for i := range keys {
		keys[i] = strings.TrimPrefix(keys[i], p.prefix)
	}
	return keys, err
}

// What the bot adds to adopt kvshadow: its store from the environment
// kvshadow-proxy reads (see the package's table; cfg.Getenv gives a test
// its own), and the store itself, for its Close at shutdown and a test's
// WaitSettled. (Begin of the bot's side.)
func NewKVShadowStore(ctx context.Context, cfg botkv.Config) (KVStore, *botkv.Store, error) {
	store, err := botkv.Open(ctx, cfg)
	if err != nil {
		return nil, nil, err // names each variable that is missing or wrong
	}
	kvs, err := store.Adapter(ErrNotFound)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close(ctx))
	}
	return kvs, store, nil
}

// (End of the bot's side.)

// The adapter over a dual-write store of two memory stores, as a bot's
// unit test may have it; in production NewKVShadowStore above builds it
// over Workers KV and MongoDB, and its tests run the same calls against
// the REST emulator and the embedded MongoDB-compatible server
// (tests/botkv).
func Example_adapter() {
	ctx := context.Background()
	primary, shadow := memory.New(memory.Config{}), memory.New(memory.Config{})
	dual, err := dualwrite.New(dualwrite.Config{Primary: primary, Shadow: shadow, Stage: dualwrite.DualWrite,
		ConsistencyWindow: -1}, // memory stores read their own writes at once
		dualwrite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	defer dual.Close(ctx)
	kvs, err := botkv.NewAdapter(dual, ErrNotFound)
	if err != nil {
		panic(err)
	}
	wordle := Prefixed(kvs, "wordle")

	type game struct{ Guesses int }
	_ = wordle.PutJSON(ctx, "games:42", game{Guesses: 3})
	_ = wordle.Put(ctx, "games:43", []byte("not JSON"))
	var g game
	fmt.Println("games:42:", wordle.GetJSON(ctx, "games:42", &g), g.Guesses)
	_, err = wordle.Get(ctx, "games:44")
	fmt.Println("games:44 missing:", err == ErrNotFound)
	// kvshadow's contract: a record that does not decode reads as not
	// found (logged and counted as kvshadow.bot.json_unreadable).
	fmt.Println("games:43 unreadable:", wordle.GetJSON(ctx, "games:43", &g) == ErrNotFound)
	keys, _ := wordle.List(ctx, "games:")
	fmt.Println("listed:", keys)

	left, err := dual.WaitSettled(ctx) // both stores verified equal
	copied, _ := shadow.Get(ctx, "wordle:games:42")
	fmt.Printf("settled: %v %v; shadow: %s\n", left.Settled(), err, copied)
	// Output:
	// games:42: <nil> 3
	// games:44 missing: true
	// games:43 unreadable: true
	// listed: [games:42 games:43]
	// settled: true <nil>; shadow: {"Guesses":3}
}
