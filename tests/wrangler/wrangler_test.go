package wrangler_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

var srv *mongotest.Server

func TestMain(m *testing.M) { mongotest.Main(m, &srv) }

func TestWranglerThroughTheProxy(t *testing.T) {
	bin := filepath.Join("node_modules", ".bin", "wrangler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("tests/wrangler/node_modules lacks wrangler: run npm ci there (make integration does)")
	}
	ctx := t.Context()
	primary := proxytest.NewPrimary(t)
	db := srv.Database(t)
	p := proxytest.Start(t, primary.Environment(srv.URI(), db), "--stage", "dualwrite", "--journal-dir", t.TempDir())
	out := p.Stdout()

	// Only what the proxy printed, and the token it says to add.
	printed := regexp.MustCompile(`(?m)^export (.+)$`).FindAllStringSubmatch(out, -1)
	if len(printed) != 1 {
		t.Fatalf("the proxy printed %d export lines:\n%s", len(printed), out)
	}
	if !strings.Contains(out, "CLOUDFLARE_API_TOKEN set to the clients' token") {
		t.Fatalf("the proxy does not say which token clients use:\n%s", out)
	}
	clientEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLOUDFLARE_API_TOKEN=" + proxytest.ClientToken,
		"WRANGLER_SEND_METRICS=false", "WRANGLER_HIDE_BANNER=true", "FORCE_COLOR=0", "CI=true"}
	clientEnv = append(clientEnv, strings.Fields(printed[0][1])...)
	wrangler := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = clientEnv
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	ns := "--namespace-id=" + proxytest.Namespace

	if out, err := wrangler("kv", "key", "put", ns, "wordle:games:1", `{"g":1}`, "--remote"); err != nil {
		t.Fatalf("wrangler kv key put: %v\n%s", err, out)
	}
	if out, err := wrangler("kv", "key", "get", ns, "wordle:games:1", "--remote", "--text"); err != nil || !strings.Contains(out, `{"g":1}`) {
		t.Errorf("wrangler kv key get: %v\n%s", err, out)
	}
	if out, err := wrangler("kv", "key", "list", ns, "--prefix=wordle:", "--remote"); err != nil || !strings.Contains(out, `"name": "wordle:games:1"`) {
		t.Errorf("wrangler kv key list: %v\n%s", err, out)
	}
	// The write went to Workers KV, and its copy to MongoDB.
	if v, err := primary.Store.Get(ctx, "wordle:games:1"); err != nil || string(v) != `{"g":1}` {
		t.Errorf("the primary holds %q, %v", v, err)
	}
	mc, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close(context.Background()) })
	shadow, err := mc.Store(mongokv.Config{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := shadow.Get(ctx, "wordle:games:1")
		if err == nil && string(v) == `{"g":1}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copy never reached MongoDB: %q, %v", v, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the copy, not measuring it
	}

	// Refusals in the words wrangler prints to its user.
	if out, err := wrangler("kv", "key", "put", ns, "k", "v", "--ttl=30", "--remote"); err == nil ||
		!strings.Contains(out, "Invalid expiration_ttl of 30. Expiration TTL must be at least 60. [code: 10034]") {
		t.Errorf("wrangler kv key put --ttl=30: %v\n%s", err, out)
	}
	if out, err := wrangler("kv", "namespace", "create", "another"); err == nil ||
		!strings.Contains(out, "kvshadow-proxy serves a fixed set of namespaces ("+proxytest.Namespace+")") || !strings.Contains(out, "--namespace") {
		t.Errorf("wrangler kv namespace create: %v\n%s", err, out)
	}
}
