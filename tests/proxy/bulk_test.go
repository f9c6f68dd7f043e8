package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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
func TestBulkCostsThePrimaryOneRequest(t *testing.T) {
	st := memory.New(memory.Config{})
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: st}, AccountID: account, Token: primaryToken})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(api)
	t.Cleanup(hs.Close)
	shadow := memory.New(memory.Config{})
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: hs.URL + "/client/v4/"})
		if err != nil {
			return nil, err
		}
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: primary, Shadow: shadow, ShadowSystem: "memory"}}}, nil
	}
	env := map[string]string{"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"MONGODB_URI": "mongodb://127.0.0.1:1/unused", "KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken}
	in := startInProcess(t, env, []string{"--stage", "dualwrite", "--lane-depth", "2048"}, service.WithBackends(open))
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
