package telemetry_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/internal/telemetry"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
)

func marker(t *testing.T, what string) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return what + hex.EncodeToString(b)
}

// leakyStore fails the writes of keys that contain "fail" with an error
// that quotes the key, the value and a connection string with a password,
// as a careless backend might.
type leakyStore struct {
	*memory.Store
	uri string
}

func (l leakyStore) Put(ctx context.Context, key string, value []byte, opts kv.PutOptions) error {
	if strings.Contains(key, "fail") {
		return kv.Unavailable("mongodb", 0, fmt.Errorf("write %s=%s via %s refused", key, value, l.uri))
	}
	return l.Store.Put(ctx, key, value, opts)
}

// Unique markers go in as keys, values, a token and a password; everything
// exported over OTLP, printed by the console exporters and logged by the
// store, the JSON helpers and OpenTelemetry itself is then searched for
// them. Under the default policy none may appear.
func TestNoValueTokenOrKeyIsExported(t *testing.T) {
	clearEnv(t)
	var (
		keyMark   = marker(t, "keymark")
		valueMark = marker(t, "valuemark")
		tokenMark = marker(t, "tokenmark")
		passMark  = marker(t, "passmark")
	)
	col := telemetrytest.StartHTTPCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20"+tokenMark)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp,console")
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp,console")

	var logs, console syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prevLog := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(prevLog) })
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Error("otel", "err", err) }))

	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	primary := memory.New(memory.Config{})
	shadow := leakyStore{Store: memory.New(memory.Config{}), uri: "mongodb://bot:" + passMark + "@db.internal/kv"}
	st, err := dualwriteotel.NewStore(dualwrite.Config{
		Primary: primary, Shadow: shadow, Stage: dualwrite.Shadow, CompareRate: 1,
		ConsistencyWindow: -1, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 2},
	}, dualwriteotel.Config{}, dualwriteotel.WithTracerProvider(tel.TracerProvider), dualwriteotel.WithMeterProvider(tel.MeterProvider),
		dualwriteotel.WithStoreOptions(dualwrite.WithLogger(logger)))
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	value := []byte(`{"secret":"` + valueMark + `"}`)
	ns, err := kv.Namespace(st.KV, "wordle")
	if err != nil {
		t.Fatal(err)
	}
	// Mirrored writes, a failing shadow (errors quoting key, value and
	// password, then an open breaker), divergences found by comparison and confirmed,
	// a malformed JSON record, a listing by a key's prefix.
	for i := range 4 {
		if err := ns.Put(ctx, fmt.Sprintf("%s-%d", keyMark, i), value, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := primary.Put(ctx, "wordle:only-"+keyMark, value, kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _ = ns.Get(ctx, "only-"+keyMark)
	_, _ = ns.Get(ctx, keyMark+"-0")
	if err := st.Dual.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Dual.Settle(ctx); err != nil { // confirms the comparison's suspicion
		t.Fatal(err)
	}
	for i := range 4 {
		if err := ns.Put(ctx, fmt.Sprintf("fail-%s-%d", keyMark, i), value, kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Dual.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := primary.Put(ctx, "wordle:json-"+keyMark, []byte("{"+valueMark), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if found, _ := kv.GetJSON(ctx, ns, "json-"+keyMark, &out); found {
		t.Fatal("malformed JSON found")
	}
	if _, err := ns.List(ctx, kv.ListOptions{Prefix: keyMark}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// The run must have exported what the markers could have leaked into.
	var names []string
	for _, s := range col.Spans() {
		names = append(names, s.Name)
	}
	for _, want := range []string{"put wordle", "get wordle", "list wordle", dualwriteotel.SpanPut, dualwriteotel.SpanCompare} {
		if !contains(names, want) {
			t.Errorf("no %q span exported (have %v)", want, names)
		}
	}
	dump := col.Dump()
	for _, want := range []string{"shadow_error", "breaker_open", "missing_in_shadow", "unavailable"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the export lacks %q: the faults did not happen", want)
		}
	}
	if !strings.Contains(logs.String(), "divergence") || !strings.Contains(logs.String(), "malformed JSON") {
		t.Errorf("the logs lack the divergence and the malformed record:\n%s", logs.String())
	}
	var sentToken bool
	for _, h := range col.Headers() {
		sentToken = sentToken || strings.Contains(h.Get("Authorization"), tokenMark)
	}
	if !sentToken {
		t.Error("the token never reached the collector's headers: the test would prove nothing about it")
	}

	for where, text := range map[string]string{"OTLP export": dump, "console exporters": console.String(), "logs": logs.String()} {
		if text == "" {
			t.Errorf("%s: nothing to search", where)
		}
		for what, m := range map[string]string{"key": keyMark, "value": valueMark, "token": tokenMark, "password": passMark} {
			if strings.Contains(text, m) {
				i := strings.Index(text, m)
				t.Errorf("%s leaks the %s: ...%s...", where, what, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
}
