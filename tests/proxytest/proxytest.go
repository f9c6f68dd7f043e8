// Package proxytest starts what the tests that run kvshadow-proxy need: an
// emulated Workers KV account as the primary, and the service in the test's
// process, configured by its command line and environment.
package proxytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/service"
)

// The emulated account's names and the tokens of a proxy's environment.
const (
	Account      = "0123456789abcdef0123456789abcdef"
	Namespace    = "fedcba9876543210fedcba9876543210"
	PrimaryToken = "primary-token"
	ClientToken  = "client-token"
	AdminToken   = "admin-token"
)

// Primary is the emulated Workers KV account: its store, and the API root
// that serves it.
type Primary struct {
	Store *memory.Store
	URL   string
}

// NewPrimary serves an emulated account until the test ends.
func NewPrimary(t testing.TB) *Primary {
	t.Helper()
	em, err := kvapi.Emulate(kvapi.Config{AccountID: Account, Token: PrimaryToken}, Namespace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Stop(context.Background()) })
	return &Primary{Store: em.Stores[Namespace], URL: em.URL}
}

// Environment is what a proxy over p and the MongoDB at uri (database db)
// reads.
func (p *Primary) Environment(uri, db string) map[string]string {
	return map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": Account, "CLOUDFLARE_KV_NAMESPACE_ID": Namespace, "CLOUDFLARE_API_TOKEN": PrimaryToken,
		"CLOUDFLARE_BASE_URL": p.URL, "MONGODB_URI": uri, "MONGODB_DB": db,
		"KVSHADOW_TOKEN": ClientToken, "KVSHADOW_ADMIN_TOKEN": AdminToken,
	}
}

// Proxy is a running kvshadow-proxy.
type Proxy struct {
	service.Listening
	out syncbuf.Buffer // written by the service, read by the test
}

// Stdout is what the proxy has printed.
func (p *Proxy) Stdout() string { return p.out.String() }

// Start runs the service with env and args until the test ends, and fails
// the test if it does not start or stop cleanly.
func Start(t testing.TB, env map[string]string, args ...string) *Proxy {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, args...)
	p := &Proxy{}
	at, stop, err := launch(context.Background(), env, args, &p.out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p.Listening = at
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("the proxy stopped with %v", err)
		}
	})
	return p
}

// Run runs the service with env and args in this process until stop (or
// ctx ends), which returns what the service returned; it returns once the
// service listens. It is Start for a command (rehearse, tee-check) or a
// test that needs its own ending.
func Run(ctx context.Context, env map[string]string, stderr io.Writer, args []string, opts ...service.Option) (at service.Listening, stop func() error, err error) {
	return launch(ctx, env, args, io.Discard, stderr, opts...)
}

// launch parses args and env as the command would and runs the service
// until stop, which returns what Run returned.
func launch(ctx context.Context, env map[string]string, args []string, stdout, stderr io.Writer, opts ...service.Option) (service.Listening, func() error, error) {
	c, err := service.Parse(args, func(k string) string { return env[k] })
	if err != nil {
		return service.Listening{}, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	up := make(chan service.Listening, 1)
	opts = append(opts, service.WithListening(func(l service.Listening) { up <- l }))
	go func() { done <- service.Run(ctx, c, stdout, stderr, opts...) }()
	select {
	case at := <-up:
		return at, func() error { cancel(); return <-done }, nil
	case err := <-done:
		cancel()
		return service.Listening{}, nil, fmt.Errorf("the proxy did not start: %v", err)
	}
}

// Token is a fresh random token (32 hex digits).
func Token() string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}
