package dualwriteotel_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
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

// The bot's wiring in production: Workers KV authoritative, MongoDB the
// shadow, both from the environment, the stage from configuration. (Not run
// here: it needs the accounts.) botkv.Open builds the same from
// kvshadow-proxy's environment, with the journal, and follows the stage
// document as the proxies do: docs/go-bot.md.
func ExampleNewStore_production() {
	ctx := context.Background()
	primary, err := cfkv.New(cfkv.ConfigFromEnv(nil)) // CLOUDFLARE_ACCOUNT_ID, _API_TOKEN, _KV_NAMESPACE_ID
	if err != nil {
		panic(err)
	}
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: os.Getenv("MONGODB_URI")})
	if err != nil {
		panic(err)
	}
	defer client.Close(ctx)
	shadow, err := client.Store(mongokv.Config{Database: "miti99bot"})
	if err != nil {
		panic(err)
	}
	stage, err := dualwrite.ParseStage(os.Getenv("KVSHADOW_STAGE")) // "dualwrite", then "shadow", ...
	if err != nil {
		panic(err)
	}
	st, err := dualwriteotel.NewStore(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: stage,
		CompareRate: 0.05, // one key in twenty has its reads compared
	}, dualwriteotel.Config{})
	if err != nil {
		panic(err)
	}
	defer func() {
		// Close drains the lanes for up to 30 s; what it could not copy
		// stays dirty, and shadow-report repairs exactly those keys.
		closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = st.Close(closeCtx)
		if dirty := st.Dual.DirtyKeys(); len(dirty) > 0 {
			// Keys are user data: a private file, not the log.
			const path = "kvshadow-dirty.txt"
			_ = os.WriteFile(path, []byte(strings.Join(dirty, "\n")+"\n"), 0o600)
			slog.Warn("kvshadow: keys left dirty at shutdown; run shadow-report --keys-file "+path+" --repair --apply", "dirty", len(dirty))
		}
	}()

	wordle, err := kv.Namespace(st.KV, "wordle") // each module keeps its own store
	if err != nil {
		panic(err)
	}
	_ = wordle
}
