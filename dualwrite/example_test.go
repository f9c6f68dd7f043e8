package dualwrite_test

import (
	"context"
	"fmt"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The bot swaps its store for the dual-write store and changes nothing
// else; the operator moves the stage along the migration.
func Example() {
	ctx := context.Background()
	workersKV := memory.New(memory.Config{}) // in production: backends/cfkv
	mongo := memory.New(memory.Config{})     // in production: backends/mongokv

	store, err := dualwrite.New(dualwrite.Config{
		Primary:           workersKV,
		Shadow:            mongo,
		Stage:             dualwrite.Shadow,
		CompareRate:       1,  // compare every read (production: a sample)
		ConsistencyWindow: -1, // memory stores read their writes at once
		FenceInterval:     -1, // no Worker writes Workers KV around the store
	}, dualwrite.WithLogger(discardLogger()))
	if err != nil {
		panic(err)
	}
	wordle, _ := kv.Namespace(store, "wordle")
	_ = wordle.Put(ctx, "games:42", []byte(`{"guesses":3}`), kv.PutOptions{TTL: time.Hour})
	v, _ := wordle.Get(ctx, "games:42")
	fmt.Printf("read: %s\n", v)

	_ = store.Flush(ctx) // wait for the copy (a test's need, not the bot's)
	copied, _ := mongo.Get(ctx, "wordle:games:42")
	fmt.Printf("shadow: %s\n", copied)
	st := store.Stats()
	fmt.Println("divergences:", st.Divergences(), "breaker:", st.Breaker)

	// The cutover, one stage at a time: handover (every writer goes
	// through the store), then live (MongoDB authoritative).
	for _, next := range []dualwrite.Stage{dualwrite.Handover, dualwrite.Live} {
		if err := store.SetStage(ctx, next); err != nil {
			panic(err)
		}
	}
	fmt.Println("stage:", store.Stage())
	if err := store.Close(ctx); err != nil {
		panic(err)
	}
	// Output:
	// read: {"guesses":3}
	// shadow: {"guesses":3}
	// divergences: 0 breaker: closed
	// stage: live
}
