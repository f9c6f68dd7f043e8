package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The real bot's failed-write queue ("__retry:mongo-failed:<key>:<id>",
// which mongokv would take for a module named __retry), written through the
// proxy's front and copied by the tee, stays in Workers KV: MongoDB never
// holds it, the settle set never takes it, the proxy counts it, and the stage
// answer tells the tee the prefixes. kvshadow's reserved keys are refused
// at the front (cloudflare-go gets 10042, kv.ErrInvalidKey through cfkv).
func TestExcludedPrefixesNeverReachMongoDB(t *testing.T) {
	em := newEmulator(t, nil)
	db := srv.Database(t)
	in := startInProcess(t, em.environment(db), []string{"--stage", "shadow", "--exclude-prefix", "__retry:", "--compare-rate", "1", "--repair-interval", "1h"})
	ctx := context.Background()
	c := in.client(t, nil)
	const retry = "__retry:mongo-failed:wordle:games:42:1"
	for _, k := range []string{retry, "wordle:games:42"} {
		if err := c.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Put(ctx, kv.ReservedPrefix+"outbox", []byte("v"), kv.PutOptions{}); !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("a client's Put of a reserved key: %v", err)
	}
	if err := c.PutMany(ctx, []kv.Entry{{Key: "__retry:mongo-failed:wordle:b:2", Value: []byte("q")}, {Key: "wordle:b", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, retry); err != nil {
		t.Fatal(err)
	}
	in.ingest(t, "__retry:mongo-failed:wordle:c:3", "q", time.Now())
	in.ingest(t, "wordle:c", "v", time.Now())

	shadow := shadowStore(t, db, nil)
	eventually(t, "the module keys in MongoDB", func() bool {
		for _, k := range []string{"wordle:games:42", "wordle:b", "wordle:c"} {
			if _, err := shadow.Get(ctx, k); err != nil {
				return false
			}
		}
		return true
	})
	eventually(t, "the lanes to empty", func() bool { return in.stats(t).Total.Queued == 0 })
	for _, p := range []string{"__retry:", kv.ReservedPrefix} {
		if res, err := shadow.List(ctx, kv.ListOptions{Prefix: p}); err != nil || len(res.Keys) > 0 {
			t.Fatalf("MongoDB lists %q under %s (%v)", res.Keys, p, err)
		}
	}
	if _, err := em.store.Get(ctx, retry); err != nil {
		t.Fatalf("Workers KV lost the excluded key: %v", err)
	}
	s := in.stats(t).Total
	if want := (dualwrite.Excluded{Writes: 2, Copies: 1, Reads: 1}); s.Excluded != want {
		t.Fatalf("excluded %+v, want %+v", s.Excluded, want)
	}
	if n := s.Unsettled + s.Dirty + s.Suspects; n != 3 {
		t.Fatalf("the settle set holds %d keys (+%d suspects), want the 3 module keys alone", s.Unsettled+s.Dirty, s.Suspects)
	}

	origin, _, _ := strings.Cut(in.api, "/client/v4/")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/kvshadow/v1/stage", nil)
	req.Header.Set("Authorization", "Bearer "+clientToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		ExcludePrefixes []string `json:"exclude_prefixes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(answer.ExcludePrefixes, []string{kv.ReservedPrefix, "__retry:"}) {
		t.Fatalf("the stage answer's exclude_prefixes: %q", answer.ExcludePrefixes)
	}
	if _, err := shadow.Get(ctx, retry); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("MongoDB Get of the excluded key: %v", err)
	}
}
