package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/service/admin"
	"github.com/kvshadow/kvshadow/tests/mongotest"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

var srv *mongotest.Server

// binDir holds what the package's tests build once (build); TestMain
// removes it.
var binDir string

func TestMain(m *testing.M) {
	serveChild()
	dir, err := os.MkdirTemp("", "proxy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	mongotest.Main(m, &srv, func() error { return os.RemoveAll(dir) })
}

const (
	account      = "0123456789abcdef0123456789abcdef"
	namespace    = "fedcba9876543210fedcba9876543210"
	primaryToken = "primary-token"
	clientToken  = "client-token"
	adminToken   = "admin-token"
)

// emulator is the primary: an emulated Workers KV account over HTTP.
type emulator struct {
	store *memory.Store
	api   *kvapi.Server
	url   string
}

func newEmulator(t testing.TB, clk clock.Clock) *emulator {
	t.Helper()
	em, err := kvapi.Emulate(kvapi.Config{AccountID: account, Token: primaryToken, Clock: clk}, namespace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = em.Stop(context.Background()) })
	return &emulator{store: em.Stores[namespace], api: em.Server, url: em.URL}
}

// environment is what a proxy instance reads, for database db.
func (e *emulator) environment(db string) map[string]string {
	return map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"CLOUDFLARE_BASE_URL": e.url, "MONGODB_URI": srv.URI(), "MONGODB_DB": db,
		"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken,
	}
}

// instance is one running proxy, in-process or not.
type instance struct {
	api, admin string
	stop       func() error
}

// banner reads the command's first lines for its URLs and the line that
// names the shadow's database.
func banner(t testing.TB, out io.Reader) (api, admin, database, serving string) {
	t.Helper()
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		if _, rest, ok := strings.Cut(line, "serving the Workers KV API at "); ok {
			api, _, _ = strings.Cut(rest, ";")
			serving = line
		}
		if _, rest, ok := strings.Cut(line, "shadow: MongoDB database "); ok {
			database = rest
		}
		if _, rest, ok := strings.Cut(line, "admin API at "); ok {
			admin = strings.TrimSpace(rest)
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return api, admin, database, serving
}

// startInProcess runs service.Run with env and args on free loopback ports.
func startInProcess(t testing.TB, env map[string]string, args []string, opts ...service.Option) *instance {
	t.Helper()
	args = append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--consistency-window", "0", "--fence-interval", "0", "--instance", t.Name()}, args...)
	at, stop, err := proxytest.Run(context.Background(), env, io.Discard, args, opts...)
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{api: at.API, admin: at.Admin, stop: sync.OnceValue(stop)}
	t.Cleanup(func() { _ = in.stop() })
	return in
}

// client is cloudflare-go, through cfkv, pointed at an instance.
func (in *instance) client(t testing.TB, clk clock.Clock) *cfkv.Store {
	t.Helper()
	// Under the race detector a bulk write of 1,000 keys through the proxy
	// and on to the embedded server can take longer than cfkv's default.
	st, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: clientToken, BaseURL: in.api,
		MaxRetries: -1, Clock: clk, RequestTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// adminClient is the admin API's client, with the admin token.
func (in *instance) adminClient() *admin.Client {
	return &admin.Client{URL: in.admin, Token: adminToken}
}

// call sends an admin request; out receives the decoded JSON answer.
func (in *instance) call(t testing.TB, method, path, body string, out any) int {
	t.Helper()
	code, err := in.adminClient().Do(context.Background(), method, path, body, out)
	if _, refused := err.(*admin.Error); err != nil && !refused {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code
}

func (in *instance) stats(t testing.TB) admin.StatsView {
	t.Helper()
	s, err := in.adminClient().Stats(context.Background())
	if err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	return s
}

// setStage asks for a stage and returns the status and the answer.
func (in *instance) setStage(t testing.TB, stage string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	code := in.call(t, "PUT", "/stage", `{"stage":"`+stage+`"}`, &out)
	return code, out
}

// eventually waits for cond, polling; it is a wait for an asynchronous
// outcome, never a measurement of time.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shadowStore reads the shadow database directly.
func shadowStore(t testing.TB, db string, clk clock.Clock) *mongokv.Store {
	t.Helper()
	client, err := mongokv.NewClient(mongokv.ClientConfig{URI: srv.URI()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	st, err := client.Store(mongokv.Config{Database: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// startOverMemoryShadow runs an in-process proxy whose primary is the REST
// API at primaryURL (its /client/v4/ root) and whose shadow is a memory
// store: what a caller waits for is the primary alone.
func startOverMemoryShadow(t testing.TB, primaryURL string, args []string) *instance {
	t.Helper()
	env, backends := overMemoryShadow(primaryURL)
	return startInProcess(t, env, args, service.WithBackends(backends))
}

// overMemoryShadow is the environment and backends of a proxy whose primary
// is the emulator at primaryURL and whose shadow is a memory store.
func overMemoryShadow(primaryURL string) (map[string]string, service.Opener) {
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"CLOUDFLARE_BASE_URL": primaryURL, "MONGODB_URI": "mongodb://127.0.0.1:1/unused",
		"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken,
	}
	memShadow := func(ctx context.Context, c *service.Config, p service.Plumbing) (*service.Backends, error) {
		primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: primaryURL})
		if err != nil {
			return nil, err
		}
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: primary, Shadow: memory.New(memory.Config{}), ShadowSystem: "memory"}}}, nil
	}
	return env, memShadow
}
