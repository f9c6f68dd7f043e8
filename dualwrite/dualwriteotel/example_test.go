package dualwriteotel_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/kv"
)

// The bot swaps its store for st.KV; every layer records to the global
// providers (no-op until a program installs an SDK, as the commands do with
// internal/telemetry).
func ExampleNewStore() {
	ctx := context.Background()
	st, err := dualwriteotel.NewStore(dualwrite.Config{
		Primary: memory.New(memory.Config{}), // Workers KV in production
		Shadow:  memory.New(memory.Config{}), // MongoDB in production
		Stage:   dualwrite.DualWrite,
	}, dualwriteotel.Config{PrimarySystem: "memory", ShadowSystem: "memory"},
		dualwriteotel.WithStoreOptions(dualwrite.WithLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		panic(err)
	}
	defer st.Close(ctx)

	wordle, err := kv.Namespace(st.KV, "wordle")
	if err != nil {
		panic(err)
	}
	if err := wordle.Put(ctx, "games:42", []byte(`{"guesses":1}`), kv.PutOptions{}); err != nil {
		panic(err)
	}
	if err := st.Dual.Flush(ctx); err != nil {
		panic(err)
	}
	fmt.Println("stage:", st.Observer.Stage(), "dirty keys:", st.Dual.Stats().Dirty)
	// Output: stage: dualwrite dirty keys: 0
}
