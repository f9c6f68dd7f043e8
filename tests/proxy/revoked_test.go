package proxy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// TestARevokedTokenIsABadGatewayThatSaysSo: the proxy's Workers KV token
// is revoked while it serves (the emulator refuses it as Cloudflare does,
// 403 with code 10000). The bot's calls are answered 502, saying that the
// store behind the proxy refuses its credentials (not a 500 "internal
// error"), the instance reports itself not ready naming the setting to
// check, and once the token is valid again the calls go through.
func TestARevokedTokenIsABadGatewayThatSaysSo(t *testing.T) {
	em := newEmulator(t, nil)
	up, err := url.Parse(em.url)
	if err != nil {
		t.Fatal(err)
	}
	var revoked atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: up.Scheme, Host: up.Host})
	cloudflare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if revoked.Load() {
			r.Header.Set("Authorization", "Bearer revoked-"+primaryToken)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(cloudflare.Close)
	env := em.environment(srv.Database(t))
	env["CLOUDFLARE_BASE_URL"] = cloudflare.URL + up.Path
	p := startInProcess(t, env, []string{"--stage", "dualwrite", "--probe-interval", "100ms"})
	client := p.client(t, nil)
	ctx := t.Context()
	if err := client.Put(ctx, "wordle:before", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}

	revoked.Store(true)
	for _, call := range []func() error{
		func() error { return client.Put(ctx, "wordle:after", []byte("v"), kv.PutOptions{}) },
		func() error { _, err := client.Get(ctx, "wordle:before"); return err },
	} {
		err := call()
		var api *cfkv.APIError
		if !errors.As(err, &api) || api.Status != http.StatusBadGateway || !strings.Contains(api.Message, "refuses its credentials") {
			t.Fatalf("a call with the proxy's token revoked: %v; want a 502 saying the store behind it refuses its credentials", err)
		}
		if strings.Contains(err.Error(), primaryToken) {
			t.Fatalf("the token reached the bot: %v", err)
		}
	}
	eventually(t, "readyz naming the token", func() bool {
		code, v := p.readyz(t)
		return code == http.StatusServiceUnavailable && strings.Contains(strings.Join(reasons(v), " "), "CLOUDFLARE_API_TOKEN")
	})

	revoked.Store(false)
	if err := client.Put(ctx, "wordle:after", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("a write once the token is valid again: %v", err)
	}
	eventually(t, "ready again", func() bool { code, _ := p.readyz(t); return code == http.StatusOK })
}

// reasons are the strings of /readyz's answer.
func reasons(v map[string]any) []string {
	var out []string
	for _, field := range v {
		list, _ := field.([]any)
		for _, x := range list {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
