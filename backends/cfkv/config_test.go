package cfkv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID":      " acc ",
		"CLOUDFLARE_API_TOKEN":       "tok",
		"CLOUDFLARE_KV_NAMESPACE_ID": "ns",
		"CLOUDFLARE_BASE_URL":        "http://127.0.0.1:8787/client/v4",
	}
	cfg := cfkv.ConfigFromEnv(func(k string) string { return env[k] })
	if cfg.AccountID != "acc" || cfg.APIToken != "tok" || cfg.NamespaceID != "ns" || cfg.BaseURL != env["CLOUDFLARE_BASE_URL"] {
		t.Fatalf("ConfigFromEnv = %+v", cfg)
	}
	if _, err := cfkv.New(cfg); err != nil {
		t.Fatalf("New(config from env): %v", err)
	}
	if _, err := cfkv.New(cfkv.ConfigFromEnv(func(string) string { return "" })); !errors.Is(err, cfkv.ErrConfig) ||
		!strings.Contains(err.Error(), cfkv.EnvAccountID) || !strings.Contains(err.Error(), cfkv.EnvAPIToken) || !strings.Contains(err.Error(), cfkv.EnvNamespaceID) {
		t.Fatalf("New(empty env) = %v; want ErrConfig naming the three variables", err)
	}
}

func TestNewValidates(t *testing.T) {
	good := cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: testToken}
	if _, err := cfkv.New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
	for name, edit := range map[string]func(*cfkv.Config){
		"no account":          func(c *cfkv.Config) { c.AccountID = "" },
		"account with slash":  func(c *cfkv.Config) { c.AccountID = "a/b" },
		"no namespace":        func(c *cfkv.Config) { c.NamespaceID = "" },
		"namespace with dots": func(c *cfkv.Config) { c.NamespaceID = ".." },
		"no token":            func(c *cfkv.Config) { c.APIToken = "" },
		"token with newline":  func(c *cfkv.Config) { c.APIToken = "tok\nX-Evil: 1" },
		"relative base URL":   func(c *cfkv.Config) { c.BaseURL = "/client/v4" },
		"base URL ftp":        func(c *cfkv.Config) { c.BaseURL = "ftp://example.com/" },
		"base URL with user":  func(c *cfkv.Config) { c.BaseURL = "https://user:pw@example.com/" },
		"negative timeout":    func(c *cfkv.Config) { c.RequestTimeout = -time.Second },
		"negative backoff":    func(c *cfkv.Config) { c.RetryBackoff = -1 },
		"negative retry wait": func(c *cfkv.Config) { c.MaxRetryWait = -1 },
	} {
		c := good
		edit(&c)
		if _, err := cfkv.New(c); !errors.Is(err, cfkv.ErrConfig) {
			t.Errorf("New(%s) = %v, want cfkv.ErrConfig", name, err)
		}
	}
}

// marker is a token planted so that any leak of it shows.
const marker = "tok-LEAK-MARKER-7f3a9c"

// TestTokenNeverLeaks plants a marker token and checks the text of every
// error path and every way of printing the config and the store.
func TestTokenNeverLeaks(t *testing.T) {
	clk := &timerClock{Fake: clock.NewFake(start)}
	ctx := t.Context()
	var texts []string
	add := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: want an error", what)
		}
		texts = append(texts, what+": "+err.Error(), fmt.Sprintf("%s: %+v", what, err), fmt.Sprintf("%#v", err))
	}

	// A server that knows another token: every call is refused.
	refused := newRig(t, clk, func(c *cfkv.Config) { c.APIToken = marker })
	add("refused put", refused.store.Put(ctx, "k", []byte("v"), kv.PutOptions{}))
	_, err := refused.store.Get(ctx, "k")
	add("refused get", err)
	_, err = refused.store.List(ctx, kv.ListOptions{})
	add("refused list", err)
	_, err = refused.store.GetMany(ctx, []string{"k"})
	add("refused bulk get", err)
	add("refused bulk put", refused.store.PutMany(ctx, []kv.Entry{{Key: "k"}}))

	// A server that accepts it, then fails in every way it can.
	r := newRig(t, clk, func(c *cfkv.Config) { c.APIToken = marker; c.MaxRetries = -1 })
	r.server.Faults().FailNext(1, kvapi.Failure{Status: http.StatusServiceUnavailable, RetryAfter: time.Second})
	add("unavailable", r.store.Put(ctx, "k", []byte("v"), kv.PutOptions{}))
	r.server.Faults().FailNext(1, kvapi.Failure{Status: http.StatusOK})
	add("success false", r.store.Delete(ctx, "k"))
	_, err = r.store.List(ctx, kv.ListOptions{Cursor: "c1.AAAA"})
	add("bad cursor", err)
	_, err = r.store.Get(ctx, "missing")
	add("not found", err)
	add("invalid key", r.store.Put(ctx, "..", nil, kv.PutOptions{}))
	r.server.Faults().SetWriteRateLimit(true)
	add("bulk refusal", errors.Join(r.store.Put(ctx, "hot", nil, kv.PutOptions{}), r.store.PutMany(ctx, []kv.Entry{{Key: "hot"}})))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.store.Get(cctx, "k")
	add("cancelled", err)

	// Nothing listening.
	down, _ := cfkv.New(cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: marker,
		BaseURL: "http://127.0.0.1:1/client/v4/", MaxRetries: -1})
	_, err = down.Get(ctx, "k")
	add("refused connection", err)

	// Config problems, with the token set and broken.
	_, err = cfkv.New(cfkv.Config{APIToken: marker})
	add("config", err)
	_, err = cfkv.New(cfkv.Config{AccountID: "a", NamespaceID: "n", APIToken: marker + "\n"})
	add("config token", err)

	// Every way to print a Config or a Store.
	cfg := cfkv.Config{AccountID: testAccount, NamespaceID: testNamespace, APIToken: marker}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		texts = append(texts, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg), fmt.Sprintf(verb, r.store), fmt.Sprintf(verb, *r.store))
	}
	texts = append(texts, cfg.String(), fmt.Sprint(struct{ C cfkv.Config }{cfg}))
	raw, _ := json.Marshal(cfg)
	texts = append(texts, string(raw))
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", cfg, "store", r.store)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", cfg, "store", r.store)
	texts = append(texts, logs.String())

	for _, text := range texts {
		if strings.Contains(text, marker) {
			t.Fatalf("the token leaked: %s", text)
		}
	}
	if !strings.Contains(cfg.String(), "APIToken: set") {
		t.Fatalf("String() = %s; want it to say the token is set", cfg.String())
	}
}
