package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// runBanner starts the service as configured by args and vars over the
// demo's stores and returns what it printed before serving.
func runBanner(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	c, err := Parse(append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, args...), env(vars))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	up := make(chan struct{})
	go func() {
		done <- Run(ctx, c, &out, io.Discard, WithBackends(OpenDemo), WithListening(func(Listening) { close(up) }))
	}()
	select {
	case <-up:
	case err := <-done:
		cancel()
		t.Fatalf("the service did not start: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Every start, not only the demo's, prints the environment a client needs:
// wrangler's API root without the trailing slash, cloudflare-go's, the
// account and the namespace; and no secret.
func TestEveryStartTellsClientsTheirEnvironment(t *testing.T) {
	out := runBanner(t, full)
	api := regexpFind(t, out, `serving the Workers KV API at (\S+);`)
	want := "export CLOUDFLARE_API_BASE_URL=" + strings.TrimSuffix(api, "/") + " CLOUDFLARE_BASE_URL=" + api +
		" CLOUDFLARE_ACCOUNT_ID=acc CLOUDFLARE_KV_NAMESPACE_ID=ns1\n"
	if !strings.Contains(out, want) {
		t.Errorf("the banner lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "CLOUDFLARE_API_TOKEN set to the clients' token (KVSHADOW_TOKEN") {
		t.Errorf("the banner does not say where the token comes from:\n%s", out)
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("the banner prints a secret:\n%s", out)
	}

	// Behind a tunnel the root is the public one; other namespaces are named.
	out = runBanner(t, with(map[string]string{"CLOUDFLARE_KV_NAMESPACE_ID": "ns1=db1,ns2=db2"}), "--public-url", "https://kv.example.com/")
	if want := "export CLOUDFLARE_API_BASE_URL=https://kv.example.com/client/v4 CLOUDFLARE_BASE_URL=https://kv.example.com/client/v4/ "; !strings.Contains(out, want) {
		t.Errorf("the banner lacks %q:\n%s", want, out)
	}
	if !strings.Contains(out, "CLOUDFLARE_KV_NAMESPACE_ID may also be ns2") {
		t.Errorf("the banner does not name the second namespace:\n%s", out)
	}
}

func TestPublicURLIsAnOrigin(t *testing.T) {
	for _, bad := range []string{"kv.example.com", "ftp://kv.example.com", "https://user:pw-SECRET@kv.example.com", "https://kv.example.com/?x=1"} {
		_, err := Parse([]string{"--public-url", bad}, env(full))
		if !errorsIs(err, ErrUsage) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("--public-url %q: %v", bad, err)
		}
	}
}

func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%q not found in:\n%s", pattern, s)
	}
	return m[1]
}

// wrangler kv namespace create against the proxy learns why it cannot, and
// where the namespaces are changed.
func TestNamespaceManagementSaysWhereToChangeThem(t *testing.T) {
	r := start(t)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", r.api+"accounts/"+DemoAccount+"/storage/kv/namespaces", strings.NewReader(`{"title":"new"}`))
	req.Header.Set("Authorization", "Bearer "+r.c.secrets.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Success bool `json:"success"`
		Errors  []struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed || env.Success || len(env.Errors) != 1 || env.Errors[0].Code != 7001 ||
		!strings.Contains(env.Errors[0].Message, "kvshadow-proxy serves a fixed set of namespaces (demo-kv)") ||
		!strings.Contains(env.Errors[0].Message, "--namespace") {
		t.Errorf("POST namespaces = %d %+v", resp.StatusCode, env)
	}
}
