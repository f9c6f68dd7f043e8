package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/service"
)

// TestBulkCostsThePrimaryOneRequest writes, reads and deletes in bulk
// through the proxy: each costs the primary what Workers KV's own bulk
// endpoint costs, one request for 10,000 keys written or deleted and one
// per 100 keys read, not one a key; and each key's metadata is kept on
// both sides.
// memoryRig is a proxy over the REST emulator (over memory) and an
// in-memory shadow, with the emulator's server for its request count.
type memoryRig struct {
	api    *kvapi.Server
	store  *memory.Store
	shadow *memory.Store
	in     *instance
}

func newMemoryRig(t *testing.T, args ...string) *memoryRig {
	t.Helper()
	em := newEmulator(t, nil)
	shadow := memory.New(memory.Config{})
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: em.url})
		if err != nil {
			return nil, err
		}
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: primary, Shadow: shadow, ShadowSystem: "memory"}}}, nil
	}
	env := map[string]string{"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"MONGODB_URI": "mongodb://127.0.0.1:1/unused", "KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken}
	in := startInProcess(t, env, append([]string{"--stage", "dualwrite", "--lane-depth", "2048"}, args...), service.WithBackends(open))
	return &memoryRig{api: em.api, store: em.store, shadow: shadow, in: in}
}

func TestBulkCostsThePrimaryOneRequest(t *testing.T) {
	r := newMemoryRig(t)
	api, shadow, in := r.api, r.shadow, r.in
	client := in.client(t, nil)
	ctx := t.Context()

	entries := make([]kv.Entry, 10_000)
	keys := make([]string, len(entries))
	for i := range entries {
		keys[i] = fmt.Sprintf("trading:bulk:%05d", i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte(fmt.Sprintf(`{"n":%d}`, i)), Metadata: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i%7))}
	}
	before := api.Requests()
	if err := client.PutMany(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if n := api.Requests() - before; n != 1 {
		t.Fatalf("a bulk write of 10,000 keys cost the primary %d requests, want 1", n)
	}
	before = api.Requests()
	got, err := client.GetMany(ctx, keys[:100])
	if err != nil || len(got) != 100 {
		t.Fatalf("GetMany = %d entries, %v", len(got), err)
	}
	if n := api.Requests() - before; n != 1 {
		t.Fatalf("a bulk read of 100 keys cost the primary %d requests, want 1", n)
	}
	if string(got[3].Metadata) != `{"v":3}` {
		t.Fatalf("metadata through the proxy: %s", got[3].Metadata)
	}
	eventually(t, "every copy in the shadow", func() bool { return in.stats(t).Total.Queued == 0 })
	e, err := shadow.GetEntry(ctx, keys[10])
	if err != nil || string(e.Value) != `{"n":10}` || string(e.Metadata) != `{"v":3}` {
		t.Fatalf("the shadow's copy: %q %s, %v", e.Value, e.Metadata, err)
	}
	before = api.Requests()
	if err := client.DeleteMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if n := api.Requests() - before; n != 1 {
		t.Fatalf("a bulk delete of 10,000 keys cost the primary %d requests, want 1", n)
	}
	eventually(t, "the deletes in the shadow", func() bool {
		_, err := shadow.Get(ctx, keys[9_999])
		return err != nil
	})
}

// TestBulkAndSingleWritesKeepEachKeysOrder races bulk writes and deletes
// with single writes of the same keys, from several clients at once, through
// the proxy: once the lanes drain, the shadow holds what the primary holds
// for every key, whatever the interleaving (the per-key order of the
// dual-write store, kept through the front's bulk endpoints).
func TestBulkAndSingleWritesKeepEachKeysOrder(t *testing.T) {
	r := newMemoryRig(t)
	ctx := t.Context()
	const keys = 40
	key := func(i int) string { return fmt.Sprintf("xo:race:%02d", i%keys) }
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 6 {
		client := r.in.client(t, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for round := range 60 {
				var err error
				switch rnd.IntN(4) {
				case 0: // a bulk write of a run of keys
					start := rnd.IntN(keys)
					batch := make([]kv.Entry, 1+rnd.IntN(12))
					for i := range batch {
						batch[i] = kv.Entry{Key: key(start + i), Value: []byte(fmt.Sprintf("bulk-%d-%d-%d", w, round, i))}
					}
					err = client.PutMany(ctx, batch)
				case 1: // a bulk delete
					start := rnd.IntN(keys)
					del := make([]string, 1+rnd.IntN(6))
					for i := range del {
						del[i] = key(start + i*3)
					}
					err = client.DeleteMany(ctx, del)
				case 2:
					err = client.Delete(ctx, key(rnd.IntN(keys)))
				default:
					err = client.Put(ctx, key(rnd.IntN(keys)), []byte(fmt.Sprintf("one-%d-%d", w, round)), kv.PutOptions{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eventually(t, "the lanes drained", func() bool { return r.in.stats(t).Total.Queued == 0 })
	if st := r.in.stats(t).Total; st.Dirty != 0 {
		t.Fatalf("%d dirty keys: drops %v", st.Dirty, st.Drops)
	}
	for i := range keys {
		p, perr := r.store.Get(ctx, key(i))
		s, serr := r.shadow.Get(ctx, key(i))
		if string(p) != string(s) || (perr == nil) != (serr == nil) {
			t.Fatalf("%s: primary %q (%v), shadow %q (%v)", key(i), p, perr, s, serr)
		}
	}
}
