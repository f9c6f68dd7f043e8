package cfkv_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// A Store is pointed at Workers KV by its config; here, at the kvapi
// emulator, as tests do. Against Cloudflare, leave BaseURL empty and take
// the rest from the environment with cfkv.ConfigFromEnv(nil).
func Example() {
	api, err := kvapi.New(kvapi.Config{
		Namespaces: map[string]kv.Store{"bot-kv": memory.New(memory.Config{})},
		Token:      "emulator-token",
	})
	if err != nil {
		log.Fatal(err)
	}
	emulator := httptest.NewServer(api)
	defer emulator.Close()

	store, err := cfkv.New(cfkv.Config{
		AccountID:   "my-account",
		NamespaceID: "bot-kv",
		APIToken:    "emulator-token",
		BaseURL:     emulator.URL + "/client/v4/",
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	wordle, err := kv.Namespace(store, "wordle")
	if err != nil {
		log.Fatal(err)
	}
	type game struct {
		Word string `json:"word"`
	}
	if err := kv.PutJSON(ctx, wordle, "games:42", game{Word: "apple"}, kv.PutOptions{TTL: time.Hour}); err != nil {
		log.Fatal(err)
	}
	var g game
	found, err := kv.GetJSON(ctx, wordle, "games:42", &g)
	fmt.Println(found, g.Word, err)

	page, err := store.List(ctx, kv.ListOptions{Prefix: "wordle:"})
	fmt.Println(page.Keys, page.Done, err)

	_, err = store.Get(ctx, "wordle:games:43")
	fmt.Println(errors.Is(err, kv.ErrNotFound))
	// Output:
	// true apple <nil>
	// [wordle:games:42] true <nil>
	// true
}
