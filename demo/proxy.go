package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service"
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
	http       *http.Client

	mu   sync.Mutex
	last dualwrite.Stats
}

// startProxy runs the service over the demo's stores: primary is Workers
// KV (the emulator, read from the bot's edge location), shadow is MongoDB
// behind a switch that can take it down, and the stage document lives in
// MongoDB. The dual-write settings are the demo's, scaled down to the
// emulator's window so that a one-minute run shows every phase.
func startProxy(ctx context.Context, cfg config, srv *servers, primary, shadow kv.Store, log *slog.Logger) (*proxy, error) {
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": demoAccount, "CLOUDFLARE_KV_NAMESPACE_ID": demoNamespace,
		"CLOUDFLARE_API_TOKEN": demoToken, "MONGODB_URI": srv.mongo.URI(), "MONGODB_DB": database,
		"KVSHADOW_TOKEN": proxyToken, "KVSHADOW_ADMIN_TOKEN": adminToken, "KVSHADOW_KEY_SECRET": keySecret,
	}
	c, err := service.Parse([]string{
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--instance", "demo", "--stage", "dualwrite",
		"--shadow-timeout", "2s", "--compare-rate", "0.25", "--consistency-window", (cfg.window + time.Second).String(),
		"--repair-interval", "2s", "--breaker-failures", "5", "--breaker-open-timeout", "2s",
		"--poll-interval", "500ms", "--heartbeat-interval", "1s",
	}, func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	board, err := srv.mongo.Client()
	if err != nil {
		return nil, err
	}
	open := func(context.Context, *service.Config, service.Plumbing) (*service.Backends, error) {
		return &service.Backends{Sides: []service.Sides{{ID: demoNamespace, Primary: primary, Shadow: shadow}},
			Board: control.NewMongoBoard(board.Database(database))}, nil
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := service.Run(rctx, c, w, io.Discard, service.WithBackends(open), service.WithLogger(log))
		w.CloseWithError(io.EOF)
		done <- err
	}()
	p := &proxy{http: &http.Client{Timeout: 30 * time.Second}}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "serving the Workers KV API at "); ok {
			p.api, _, _ = strings.Cut(rest, ";")
		}
		if _, rest, ok := strings.Cut(lines.Text(), "admin API at "); ok {
			p.admin = strings.TrimSpace(rest)
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if p.admin == "" {
		cancel()
		return nil, fmt.Errorf("kvshadow-proxy did not start: %w", <-done)
	}
	var once sync.Once
	var result error
	p.stop = func() error {
		once.Do(func() { cancel(); result = <-done })
		return result
	}
	return p, nil
}

// client is the bot's Workers KV client, pointed at the proxy.
func (p *proxy) client() (*cfkv.Store, error) {
	return cfkv.New(cfkv.Config{AccountID: demoAccount, NamespaceID: demoNamespace, APIToken: proxyToken,
		BaseURL: p.api, RetryBackoff: 50 * time.Millisecond})
}

// call sends an admin request and decodes its JSON answer into out.
func (p *proxy) call(ctx context.Context, method, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, p.admin+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return fmt.Errorf("%s /%s: %d %s", method, path, resp.StatusCode, e.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// setStage changes the stage through the admin API.
func (p *proxy) setStage(ctx context.Context, stage dualwrite.Stage) error {
	return p.call(ctx, http.MethodPut, "stage", fmt.Sprintf(`{"stage":%q}`, stage), nil)
}

// repair asks the proxy to repair its dirty keys now.
func (p *proxy) repair(ctx context.Context) error {
	return p.call(ctx, http.MethodPost, "repair", "", nil)
}

// Stats reads GET /stats into the dual-write store's own snapshot; when the
// admin API does not answer it returns the last one read.
func (p *proxy) Stats() dualwrite.Stats {
	var v struct {
		Total struct {
			Stage       string            `json:"stage"`
			Queued      int64             `json:"queued"`
			Dirty       int               `json:"dirty"`
			Drops       map[string]uint64 `json:"drops"`
			Repairs     map[string]uint64 `json:"repairs"`
			Comparisons map[string]uint64 `json:"comparisons"`
			Breaker     string            `json:"breaker"`
		} `json:"total"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.call(ctx, http.MethodGet, "stats", "", &v); err != nil {
		return p.last
	}
	t := v.Total
	stage, _ := dualwrite.ParseStage(t.Stage)
	st := dualwrite.Stats{Stage: stage, Queued: t.Queued, Dirty: t.Dirty, Breaker: dualwrite.BreakerState(t.Breaker),
		Drops: map[dualwrite.DropReason]uint64{}, Repairs: map[dualwrite.RepairOutcome]uint64{}, Comparisons: map[compare.Kind]uint64{}}
	for k, n := range t.Drops {
		st.Drops[dualwrite.DropReason(k)] = n
	}
	for k, n := range t.Repairs {
		st.Repairs[dualwrite.RepairOutcome(k)] = n
	}
	for k, n := range t.Comparisons {
		st.Comparisons[compare.Kind(k)] = n
	}
	p.last = st
	return st
}
