package botkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/botkv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// emulator is a Workers KV account of the test process (the REST
// emulator over memory), started once.
var emulator = sync.OnceValue(func() string {
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"fedcba9876543210fedcba9876543210": memory.New(memory.Config{})},
		AccountID: "0123456789abcdef0123456789abcdef", Token: "primary-token"})
	if err != nil {
		panic(err)
	}
	return httptest.NewServer(api).URL + "/client/v4/"
})

// env is an environment Open accepts, up to its first connect: the
// emulator's Workers KV, MongoDB on a port nothing listens on.
func env(over map[string]string) func(string) string {
	m := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": "0123456789abcdef0123456789abcdef", "CLOUDFLARE_KV_NAMESPACE_ID": "fedcba9876543210fedcba9876543210",
		"CLOUDFLARE_API_TOKEN": "primary-token", "MONGODB_URI": "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200",
		"CLOUDFLARE_BASE_URL": emulator(),
	}
	for k, v := range over {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// A wrong or missing variable fails Open before any I/O (MongoDB is
// unreachable here: a connect would fail otherwise), with an error that
// names it and quotes no secret.
func TestOpenNamesTheWrongVariable(t *testing.T) {
	for _, c := range []struct {
		name, value string // value "" unsets it
		want        string
	}{
		{"CLOUDFLARE_ACCOUNT_ID", "", "not set"},
		{"CLOUDFLARE_ACCOUNT_ID", "my account/1", "is not an ID"},
		{"CLOUDFLARE_KV_NAMESPACE_ID", "fedcba9876543210fedcba9876543210,0123456789abcdef0123456789abcdef", "several namespaces"},
		{"CLOUDFLARE_API_TOKEN", "", "not set"},
		{"CLOUDFLARE_API_TOKEN", "secret with a space", "whitespace"},
		{"CLOUDFLARE_BASE_URL", "localhost:8787", "the API root"},
		{"MONGODB_URI", "", "not set"},
		{"MONGODB_URI", "postgres://user:hunter2@db.example/x", "mongodb://"},
		{"MONGODB_DB", "miti99bot/prod", "database"},
		{"KVSHADOW_STAGE", "shadw", "want one of off, dualwrite"},
		{"KVSHADOW_CONSISTENCY_WINDOW", "-1s", "0 for none"},
		{"KVSHADOW_CONSISTENCY_WINDOW", "60", "a duration"},
		{"KVSHADOW_COMPARE_RATE", "5%", "a fraction 0..1"},
		{"KVSHADOW_BREAKER_OPEN_TIMEOUT", "30", "a positive duration"},
		{"KVSHADOW_BREAKER_OPEN_TIMEOUT", "0s", "a positive duration"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			st, err := botkv.Open(ctx, botkv.Config{Getenv: env(map[string]string{c.name: c.value})}, botkv.WithLogger(slog.New(slog.DiscardHandler)))
			if err == nil {
				st.Close(ctx)
				t.Fatal("Open accepted it")
			}
			var ve *botkv.VarError
			if !errors.As(err, &ve) || ve.Name != c.name || !errors.Is(err, botkv.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v; want a *VarError naming %s (%q)", err, c.name, c.want)
			}
			if !strings.Contains(err.Error(), c.name) {
				t.Errorf("the message does not name %s: %v", c.name, err)
			}
			for _, secret := range []string{"hunter2", "secret with"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the message quotes a secret: %v", err)
				}
			}
		})
	}
}

// Open's words for a Workers KV setting are cfkv's own (cfkv.Config.Check,
// what cfkv.New refuses), one piece for both: a *VarError for each
// problem, with its text.
func TestOpenSaysWhatCfkvRefuses(t *testing.T) {
	over := map[string]string{"CLOUDFLARE_ACCOUNT_ID": "my account/1", "CLOUDFLARE_KV_NAMESPACE_ID": "", "CLOUDFLARE_API_TOKEN": "a b", "CLOUDFLARE_BASE_URL": "ftp://x/"}
	_, err := botkv.Open(t.Context(), botkv.Config{Getenv: env(over)})
	problems := cfkv.ConfigFromEnv(env(over)).Check()
	if _, nerr := cfkv.New(cfkv.ConfigFromEnv(env(over))); len(problems) != 4 || !errors.Is(nerr, cfkv.ErrConfig) {
		t.Fatalf("cfkv: %v, New: %v", problems, nerr)
	}
	for _, p := range problems {
		if want := "botkv: " + p.Var + ": " + p.Text; !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v; want %q", err, want)
		}
	}
}

// Several wrong variables are named in one error.
func TestOpenNamesEveryWrongVariable(t *testing.T) {
	_, err := botkv.Open(t.Context(), botkv.Config{Getenv: env(map[string]string{"CLOUDFLARE_ACCOUNT_ID": "", "KVSHADOW_STAGE": "on", "MONGODB_DB": "bot.prod"})})
	if err == nil || !strings.Contains(err.Error(), "CLOUDFLARE_ACCOUNT_ID: not set") || !strings.Contains(err.Error(), `KVSHADOW_STAGE: "on"`) ||
		!strings.Contains(err.Error(), `MONGODB_DB: "bot.prod"`) {
		t.Fatalf("Open: %v", err)
	}
}

// A secret's file is read instead of its variable, and a missing file is
// named by the variable it holds.
func TestOpenReadsSecretsFromFiles(t *testing.T) {
	_, err := botkv.Open(t.Context(), botkv.Config{Getenv: env(nil), CFTokenFile: t.TempDir() + "/absent"})
	var ve *botkv.VarError
	if !errors.As(err, &ve) || ve.Name != "CLOUDFLARE_API_TOKEN" || !strings.Contains(err.Error(), "reading the file that holds CLOUDFLARE_API_TOKEN") {
		t.Fatalf("Open with a missing token file: %v", err)
	}
}

// Past its variables Open connects to MongoDB, and says so when it cannot
// (and, with no stage kept in its journal directory, has none to run
// meanwhile), quoting no credential of the URI in its error or its logs.
func TestOpenSaysWhenMongoDBIsUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var logs syncbuf.Buffer
	dir := t.TempDir()
	_, err := botkv.Open(ctx, botkv.Config{Getenv: env(map[string]string{"KVSHADOW_JOURNAL_DIR": dir,
		"MONGODB_URI": "mongodb://bot:s3cret@127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200"})},
		botkv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err == nil || errors.Is(err, botkv.ErrConfig) || !errors.Is(err, botkv.ErrMongoDBDown) || !errors.Is(err, kv.ErrUnavailable) ||
		!strings.Contains(err.Error(), "MongoDB at 127.0.0.1:1: unreachable") || !strings.Contains(err.Error(), "holds no stage this bot ran") {
		t.Fatalf("Open with MongoDB unreachable: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the URI's password is quoted:\n%v\n%s", err, logs.String())
	}
	if _, known := control.LastStage(dir); known {
		t.Error("a failed Open kept a stage")
	}
}

// With a stage kept that Workers KV is authoritative in, Open starts
// detached instead, and says so in one warning that names the hosts and
// quotes no credential of the URI.
func TestADetachedStartsWarningNamesTheHostsOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var logs syncbuf.Buffer
	dir := t.TempDir()
	if err := control.KeepStage(dir, dualwrite.Shadow); err != nil {
		t.Fatal(err)
	}
	st, err := botkv.Open(ctx, botkv.Config{Getenv: env(map[string]string{"KVSHADOW_JOURNAL_DIR": dir,
		"MONGODB_URI": "mongodb://bot:s3cret@127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200"})},
		botkv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatalf("Open with MongoDB unreachable and shadow kept: %v", err)
	}
	started := logs.String() // Close's own line (the board cannot be left) apart
	_ = st.Close(context.Background())
	var warnings []string
	for _, l := range strings.Split(started, "\n") {
		if strings.Contains(l, "level=WARN") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "MongoDB at 127.0.0.1:1: unreachable") || !strings.Contains(warnings[0], "serving in shadow") {
		t.Errorf("%d warnings at start; want one naming the hosts and the stage served:\n%s", len(warnings), started)
	}
	if strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), "bot:") {
		t.Errorf("the URI's credentials are quoted:\n%s", logs.String())
	}
}

// The adapter's List pages to the end (Workers KV pages hold at most
// 1,000 keys), and its errors are the bot's sentinel or kv's.
func TestAdapter(t *testing.T) {
	ctx := t.Context()
	mem := memory.New(memory.Config{})
	var logs bytes.Buffer
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	kvs, err := botkv.NewAdapter(mem, ErrNotFound, botkv.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), botkv.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	trading, err := kvs.Module("trading")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2500 {
		if err := trading.Put(ctx, fmt.Sprintf("trades:%05d", i), []byte("t")); err != nil {
			t.Fatal(err)
		}
	}
	_ = kvs.Put(ctx, "tradingx:1", []byte("other module"))
	keys, err := trading.List(ctx, "trades:")
	if err != nil || len(keys) != 2500 || keys[0] != "trades:00000" || keys[2499] != "trades:02499" {
		t.Fatalf("List = %d keys, %v", len(keys), err)
	}
	if keys, err := kvs.List(ctx, strings.Repeat("p", kv.MaxKeySize+1)); !errors.Is(err, kv.ErrInvalidPrefix) {
		t.Fatalf("List of a 513-byte prefix = %v, %v", keys, err)
	}
	if _, err := trading.Get(ctx, "trades:x"); err != ErrNotFound {
		t.Fatalf("Get of a missing key = %v; want the bot's ErrNotFound itself", err)
	}
	if err := trading.Put(ctx, "", []byte("v")); !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("Put of an empty key = %v", err)
	}
	if err := trading.PutJSON(ctx, "bad", func() {}); !errors.Is(err, kv.ErrInvalidJSON) {
		t.Fatalf("PutJSON of a func = %v", err)
	}
	var n int
	if err := trading.GetJSON(ctx, "trades:00001", n); !errors.Is(err, kv.ErrInvalidArgument) {
		t.Fatalf("GetJSON into a non-pointer = %v", err)
	}
	for _, raw := range []string{"", "{", `"a string"`} {
		_ = trading.Put(ctx, "rec", []byte(raw))
		if err := trading.GetJSON(ctx, "rec", &n); err != ErrNotFound {
			t.Fatalf("GetJSON of %q into an int = %v; want ErrNotFound", raw, err)
		}
	}
	if strings.Count(logs.String(), "namespace=trading") != 3 || strings.Contains(logs.String(), "a string") {
		t.Errorf("logs:\n%s", logs.String())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if got := unreadable(rm, "trading"); got != 3 {
		t.Errorf("kvshadow.bot.json_unreadable{db.namespace=trading} = %d, want 3", got)
	}
	if _, err := botkv.NewAdapter(mem, nil); !errors.Is(err, botkv.ErrConfig) {
		t.Errorf("NewAdapter without a sentinel: %v", err)
	}
}

func unreadable(rm metricdata.ResourceMetrics, module string) int64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "kvshadow.bot.json_unreadable" {
				for _, dp := range sum.DataPoints {
					if v, _ := dp.Attributes.Value("db.namespace"); v.AsString() == module {
						return dp.Value
					}
				}
			}
		}
	}
	return 0
}
