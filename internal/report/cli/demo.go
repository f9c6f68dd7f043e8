package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

const (
	demoAccount   = "demo-account"
	demoNamespace = "demo-namespace"
	demoToken     = "demo-token"
)

// startDemo runs the Workers KV REST API emulator on loopback, reached
// through the real Workers KV client, and an in-memory shadow (the embedded
// MongoDB-compatible server lives in the tests module, to keep its
// dependencies out of this binary), so that every output, the gate and a
// repair can be tried without an account.
func startDemo(ctx context.Context, o *options, stderr io.Writer) (*stores, error) {
	em, err := kvapi.Emulate(kvapi.Config{AccountID: demoAccount, Token: demoToken}, demoNamespace)
	if err != nil {
		return nil, err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = em.Stop(ctx)
	}
	shadow := memory.New(memory.Config{})
	if err := seedDemo(ctx, em.Stores[demoNamespace], shadow); err != nil {
		stop()
		return nil, err
	}
	primary, err := cfkv.New(cfkv.Config{
		AccountID: demoAccount, NamespaceID: demoNamespace, APIToken: demoToken,
		BaseURL: em.URL, MaxRetries: -1, MaxBulkWrite: o.cfMaxBulkWrite,
	})
	if err != nil {
		stop()
		return nil, err
	}
	fmt.Fprintf(stderr, "shadow-report: demo: Workers KV emulator at %s (in memory) vs an in-memory shadow, seeded with sample divergences\n", em.URL)
	return &stores{
		primary: primary, shadow: shadow, identity: "demo", close: stop,
		names: [2]string{"cloudflare_kv, demo emulator", "memory, demo shadow"},
	}, nil
}

// seedDemo writes the demo's keys: three modules of a game bot, mostly in
// step, with one divergence of every kind.
func seedDemo(ctx context.Context, primary, shadow kv.Store) error {
	// A side without a value (pv or sv "") lacks the key.
	type key struct {
		name, pv, sv string
		pttl, sttl   time.Duration
	}
	keys := []key{
		{name: "wordle:config", pv: `{"words":2315}`, sv: `{"words":2315}`},
		{name: "wordle:games:1001", pv: `{"word":"crane","guesses":3}`, sv: `{"guesses":3,"word":"crane"}`},
		{name: "wordle:games:1002", pv: `{"word":"slate","guesses":5}`, sv: `{"word":"slate","guesses":4}`},
		{name: "wordle:games:1003", pv: `{"word":"pious","guesses":2}`},
		{name: "wordle:streak:42", pv: "7", sv: "7", pttl: 24 * time.Hour, sttl: 24 * time.Hour},
		{name: "loldle-emoji:daily", pv: "🐉🔥🗡️", sv: "🐉🔥🗡️", pttl: 12 * time.Hour, sttl: 36 * time.Hour},
		{name: "loldle-emoji:score:7", pv: "120", sv: "120"},
		{name: "loldle-emoji:session:old", sv: "stale"},
		{name: "trading:portfolio:42", pv: `{"BTC":0.5}`, sv: `{"BTC":0.5}`},
		{name: "trading:quote:BTC", pv: "97000", sv: "97000", pttl: time.Hour},
	}
	for i := range 40 {
		v := fmt.Sprintf(`{"user":%d,"wins":%d}`, i, i%7)
		keys = append(keys, key{name: fmt.Sprintf("wordle:users:%03d", i), pv: v, sv: v})
	}
	for _, k := range keys {
		if k.pv != "" {
			if err := primary.Put(ctx, k.name, []byte(k.pv), kv.PutOptions{TTL: k.pttl}); err != nil {
				return err
			}
		}
		if k.sv != "" {
			if err := shadow.Put(ctx, k.name, []byte(k.sv), kv.PutOptions{TTL: k.sttl}); err != nil {
				return err
			}
		}
	}
	return nil
}
