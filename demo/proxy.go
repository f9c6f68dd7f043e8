package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// The proxy's tokens guard loopback listeners for the run; never printed.
const (
	proxyToken = "demo-proxy-token-not-a-secret"
	adminToken = "demo-admin-token-not-a-secret"
	keySecret  = "kvshadow demo secret"
)

// proxy is kvshadow-proxy running in this process: the product's path, which
// the bot's traffic takes over HTTP through cloudflare-go as any Workers KV
// client would.
type proxy struct {
	api, admin string
	stop       func() error
	client     *admin.Client

	mu   sync.Mutex
	last admin.StoreStats
}

// startProxy runs the service over the demo's stores, the shadow behind a
// switch that can take it down. The dual-write settings are scaled down to
// the emulator's window so that a one-minute run shows every phase.
func startProxy(ctx context.Context, cfg config, srv *servers, primary, shadow kv.Store, log *slog.Logger) (*proxy, error) {
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": demoAccount, "CLOUDFLARE_KV_NAMESPACE_ID": demoNamespace,
		"CLOUDFLARE_API_TOKEN": demoToken, "MONGODB_URI": srv.mongo.URI(), "MONGODB_DB": database,
		"KVSHADOW_TOKEN": proxyToken, "KVSHADOW_ADMIN_TOKEN": adminToken, "KVSHADOW_KEY_SECRET": keySecret,
	}
	// The settle journal starts empty, as the stores do.
	journalDir := filepath.Join(cfg.dir, "journal")
	if err := os.RemoveAll(journalDir); err != nil {
		return nil, err
	}
	args := []string{
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--instance", "demo", "--stage", "dualwrite",
		"--shadow-timeout", "2s", "--compare-rate", "0.25", "--consistency-window", (cfg.window + time.Second).String(),
		"--repair-interval", "2s", "--breaker-failures", "5", "--breaker-open-timeout", "2s",
		"--poll-interval", "500ms", "--heartbeat-interval", "1s", "--journal-dir", journalDir,
		// The bot goes through the proxy (no tee writes a binding), so the
		// flip needs no fence interval.
		"--fence-interval", "0",
	}
	board, err := srv.mongo.Client()
	if err != nil {
		return nil, err
	}
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		return &service.Backends{Sides: []service.Sides{{ID: demoNamespace, Primary: primary, Shadow: shadow}},
			Board: control.NewMongoBoard(board.Database(database))}, nil
	}
	at, stop, err := proxytest.Run(context.WithoutCancel(ctx), env, io.Discard, args, service.WithBackends(open), service.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("kvshadow-proxy: %w", err)
	}
	p := &proxy{api: at.API, admin: at.Admin, stop: sync.OnceValue(stop), client: &admin.Client{URL: at.Admin, Token: adminToken}}
	return p, nil
}

func (p *proxy) botClient() (*cfkv.Store, error) {
	return cfkv.New(cfkv.Config{AccountID: demoAccount, NamespaceID: demoNamespace, APIToken: proxyToken,
		BaseURL: p.api, RetryBackoff: 50 * time.Millisecond})
}

func (p *proxy) repair(ctx context.Context) error { return p.client.Repair(ctx) }

// Stats reads GET /stats, the counters summed over the namespaces; when
// the admin API does not answer it returns the last ones read.
func (p *proxy) Stats() admin.StoreStats {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, err := p.client.Stats(ctx); err == nil {
		p.last = v.Total
	}
	return p.last
}
