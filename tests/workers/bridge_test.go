package workers_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
	"github.com/kvshadow/kvshadow/tests/nodescript"
)

// bridge is a running bridge Worker.
type bridge struct {
	URL, Account, Namespace, Token string
}

// nodeScript is a running script of workers/test/support that speaks in
// JSON lines on its standard output and listens to its standard input.
type nodeScript struct {
	*nodescript.Script
	t *testing.T
}

// next decodes the script's next line into v, failing the test if none
// comes within d.
func (n *nodeScript) next(v any, d time.Duration) {
	n.t.Helper()
	l, err := n.Next(d)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(l), v); err != nil {
		n.t.Fatalf("%s said %q: %v", n.Name, l, err)
	}
}

// say writes one line to the script.
func (n *nodeScript) say(line string) {
	n.t.Helper()
	if err := n.Say(line); err != nil {
		n.t.Fatal(err)
	}
}

// startNode runs a script of workers/test/support with env added, and
// stops it when the test ends (closing its standard input).
func startNode(t *testing.T, script string, env []string) *nodeScript {
	t.Helper()
	pkg, err := filepath.Abs(filepath.Join("..", "..", "workers"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := nodescript.Start(context.Background(), pkg, script, env, "miniflare")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &nodeScript{Script: s, t: t}
}

// newToken returns a random token for one test.
func newToken() string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}

// startBridge runs the bridge Worker in miniflare (run-bridge.js).
func startBridge(t *testing.T) bridge {
	t.Helper()
	b := bridge{Token: newToken()}
	startNode(t, "run-bridge.js", []string{"KVSHADOW_BRIDGE_TOKEN=" + b.Token}).next(&b, 3*time.Minute)
	return b
}

func (b bridge) store(t *testing.T) *cfkv.Store {
	t.Helper()
	st, err := cfkv.New(cfkv.Config{
		AccountID:   b.Account,
		NamespaceID: b.Namespace,
		APIToken:    b.Token,
		BaseURL:     b.URL,
		MaxRetries:  3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// empty deletes every key, so that each subtest starts from an empty
// namespace on the one binding the bridge has.
func empty(t *testing.T, st *cfkv.Store) {
	t.Helper()
	ctx := context.Background()
	cursor := ""
	for {
		res, err := st.List(ctx, kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatalf("List to empty the namespace: %v", err)
		}
		if len(res.Keys) > 0 {
			if err := st.DeleteMany(ctx, res.Keys); err != nil {
				t.Fatalf("DeleteMany to empty the namespace: %v", err)
			}
		}
		if res.Done {
			return
		}
		cursor = res.Cursor
	}
}

// TestConformanceThroughBridge runs the whole kv suite through cfkv
// against the bridge Worker in workerd, on real time (the suite then waits
// out its expiries, about 95 s).
func TestConformanceThroughBridge(t *testing.T) {
	b := startBridge(t)
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			st := b.store(t)
			empty(t, st)
			return st
		},
		ListsInfo: true, // workerd's KV lists each key's expiration and metadata
	})
}

// The bridge in workerd, through cfkv (kvshadow-proxy's client of its
// primary), serves what the proxy does with dualwrite.StageKey (writes
// "handover", reads it back, deletes it) and refuses the rest, as the
// proxy's front refuses clients: another value, a bulk write or delete, or
// another key under kv.ReservedPrefix, each kv.ErrInvalidKey (400 10042).
func TestBridgeServesTheProxysStageKeyAlone(t *testing.T) {
	st := startBridge(t).store(t)
	ctx := t.Context()
	if err := st.Put(ctx, dualwrite.StageKey, []byte("handover"), kv.PutOptions{}); err != nil {
		t.Fatalf("the proxy's write of %s: %v", dualwrite.StageKey, err)
	}
	for what, err := range map[string]error{
		"Put shadow":         st.Put(ctx, dualwrite.StageKey, []byte("shadow"), kv.PutOptions{}),
		"Put with a TTL":     st.Put(ctx, dualwrite.StageKey, []byte("handover"), kv.PutOptions{TTL: time.Hour}),
		"PutMany":            st.PutMany(ctx, []kv.Entry{{Key: dualwrite.StageKey, Value: []byte("off")}}),
		"DeleteMany":         st.DeleteMany(ctx, []string{dualwrite.StageKey}),
		"Put of another key": st.Put(ctx, kv.ReservedPrefix+"outbox", []byte("v"), kv.PutOptions{}),
		"GetMany":            func() error { _, err := st.GetMany(ctx, []string{dualwrite.StageKey}); return err }(),
		"List by the prefix": func() error { _, err := st.List(ctx, kv.ListOptions{Prefix: kv.ReservedPrefix}); return err }(),
		"GetMetadata":        func() error { _, err := st.GetMetadata(ctx, dualwrite.StageKey); return err }(),
	} {
		if !errors.Is(err, kv.ErrInvalidKey) {
			t.Errorf("%s of a reserved key through the bridge: %v, want kv.ErrInvalidKey", what, err)
		}
	}
	if v, err := st.Get(ctx, dualwrite.StageKey); err != nil || string(v) != "handover" {
		t.Fatalf("the proxy's read of %s: %q, %v", dualwrite.StageKey, v, err)
	}
	if err := st.Delete(ctx, dualwrite.StageKey); err != nil {
		t.Fatalf("the proxy's delete of %s: %v", dualwrite.StageKey, err)
	}
	if _, err := st.Get(ctx, dualwrite.StageKey); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
}
