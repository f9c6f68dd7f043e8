package otelkv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

func newRedactor(t *testing.T, p compare.KeyPolicy) *compare.Redactor {
	t.Helper()
	r, err := compare.NewRedactor(p, []byte("test secret"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func instrument(t *testing.T, rec *telemetrytest.Recorder, s kv.Store, cfg otelkv.Config) kv.Store {
	t.Helper()
	out, err := otelkv.New(s, cfg, otelkv.WithTracerProvider(rec.TP), otelkv.WithMeterProvider(rec.MP))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSpansCarrySemanticAttributes(t *testing.T) {
	ctx := context.Background()
	rec := telemetrytest.New(t)
	red := newRedactor(t, compare.KeyHMAC)
	s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{
		System: otelkv.SystemMemory, Role: otelkv.RoleShadow, Redactor: red,
		Stage: func() string { return "dualwrite" },
	})

	if err := s.Put(ctx, "wordle:games:42", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "wordle:games:42"); err != nil {
		t.Fatal(err)
	}

	spans := rec.Named("put wordle")
	if len(spans) != 1 {
		t.Fatalf("spans named %q: %d, want 1 (all: %v)", "put wordle", len(spans), names(rec))
	}
	sp := spans[0]
	if sp.SpanKind() != trace.SpanKindClient {
		t.Errorf("kind = %v, want client", sp.SpanKind())
	}
	want := []attribute.KeyValue{
		semconv.DBSystemNameKey.String("memory"),
		semconv.DBOperationName("put"),
		semconv.DBNamespace("wordle"),
		otelkv.RoleKey.String("shadow"),
		otelkv.StageKey.String("dualwrite"),
		otelkv.OutcomeKey.String("ok"),
		otelkv.KeyKey.String(red.Key("wordle:games:42")),
	}
	if !telemetrytest.HasAll(sp.Attributes(), want) {
		t.Errorf("attributes %v, want at least %v", sp.Attributes(), want)
	}
	if sp.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", sp.Status())
	}
	if got := len(rec.With("get wordle", semconv.DBOperationName("get"))); got != 1 {
		t.Errorf("get spans: %d, want 1", got)
	}
}

func TestNotFoundIsAnOutcomeNotAnError(t *testing.T) {
	rec := telemetrytest.New(t)
	s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory, Role: otelkv.RolePrimary})
	if _, err := s.Get(context.Background(), "wordle:nope"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	sp := rec.Named("get wordle")[0]
	if sp.Status().Code != codes.Unset {
		t.Errorf("status %v, want unset", sp.Status())
	}
	if v, _ := telemetrytest.Attr(sp, otelkv.OutcomeKey); v.AsString() != "not_found" {
		t.Errorf("outcome %q, want not_found", v.AsString())
	}
	rm := rec.Collect(t)
	if n, _ := telemetrytest.Value(rm, otelkv.MetricOperations, otelkv.OutcomeKey.String("not_found"), semconv.DBOperationName("get")); n != 1 {
		t.Errorf("not_found operations = %v, want 1", n)
	}
}

// brokenStore fails every call with an error whose text quotes the key and
// a secret, as a careless backend might.
type brokenStore struct{ err func(key string) error }

func (b brokenStore) Get(_ context.Context, key string) ([]byte, error) { return nil, b.err(key) }
func (b brokenStore) Put(_ context.Context, key string, _ []byte, _ kv.PutOptions) error {
	return b.err(key)
}
func (b brokenStore) Delete(_ context.Context, key string) error { return b.err(key) }
func (b brokenStore) List(_ context.Context, o kv.ListOptions) (kv.ListResult, error) {
	return kv.ListResult{}, b.err(o.Prefix)
}

func TestErrorsAreRecordedByClassOnly(t *testing.T) {
	rec := telemetrytest.New(t)
	leak := func(key string) error {
		return kv.Unavailable("memory", 3*time.Second, fmt.Errorf("dial mongodb://user:hunter2@db: key %s", key))
	}
	s := instrument(t, rec, brokenStore{err: leak}, otelkv.Config{System: otelkv.SystemMongoDB, Role: otelkv.RoleShadow})
	ctx := context.Background()
	_ = s.Put(ctx, "wordle:secret-key-1", []byte("x"), kv.PutOptions{})
	_, _ = s.List(ctx, kv.ListOptions{Prefix: "wordle:secret-pre"})

	for _, sp := range rec.Ended() {
		if sp.Status().Code != codes.Error || sp.Status().Description != "unavailable" {
			t.Errorf("%s: status %+v, want error \"unavailable\"", sp.Name(), sp.Status())
		}
		if v, _ := telemetrytest.Attr(sp, semconv.ErrorTypeKey); v.AsString() != "unavailable" {
			t.Errorf("%s: error.type %q, want unavailable", sp.Name(), v.AsString())
		}
		dump := fmt.Sprint(sp.Name(), sp.Attributes(), sp.Events(), sp.Status())
		for _, secret := range []string{"hunter2", "secret-key-1", "secret-pre"} {
			if strings.Contains(dump, secret) {
				t.Errorf("%s leaks %q: %s", sp.Name(), secret, dump)
			}
		}
	}
	rm := rec.Collect(t)
	if n, _ := telemetrytest.Value(rm, otelkv.MetricOperations, otelkv.OutcomeKey.String("unavailable"),
		semconv.DBSystemNameKey.String("mongodb"), otelkv.RoleKey.String("shadow")); n != 2 {
		t.Errorf("unavailable operations = %v, want 2", n)
	}
	if n, _ := telemetrytest.Value(rm, otelkv.MetricDuration, semconv.DBOperationName("list")); n != 1 {
		t.Errorf("list durations recorded = %v, want 1", n)
	}
	if u := telemetrytest.Unit(rm, otelkv.MetricDuration); u != "s" {
		t.Errorf("duration unit %q, want s", u)
	}
}

func TestKeyPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy compare.KeyPolicy
		want   string
	}{
		{compare.KeyHMAC, ""},
		{compare.KeyPlain, "wordle:games:7"},
		{compare.KeyHidden, "wordle:#"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			rec := telemetrytest.New(t)
			red := newRedactor(t, tc.policy)
			s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{Redactor: red})
			_ = s.Delete(context.Background(), "wordle:games:7")
			got, _ := telemetrytest.Attr(rec.Ended()[0], otelkv.KeyKey)
			want := tc.want
			if want == "" {
				want = red.Key("wordle:games:7")
				if strings.Contains(want, "games") {
					t.Fatalf("hmac key %q shows the key", want)
				}
			}
			if got.AsString() != want {
				t.Errorf("key attribute %q, want %q", got.AsString(), want)
			}
		})
	}
}

func TestDefaultRedactionHidesKeys(t *testing.T) {
	rec := telemetrytest.New(t)
	s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{})
	_ = s.Put(context.Background(), "wordle:plain-text-key", []byte("x"), kv.PutOptions{})
	sp := rec.Ended()[0]
	v, _ := telemetrytest.Attr(sp, otelkv.KeyKey)
	if strings.Contains(v.AsString(), "plain-text-key") || !strings.HasPrefix(v.AsString(), "wordle:#") {
		t.Errorf("default key attribute %q, want wordle:#<hmac>", v.AsString())
	}
	if sys, _ := telemetrytest.Attr(sp, semconv.DBSystemNameKey); sys.AsString() != "other" {
		t.Errorf("db.system.name %q, want other", sys.AsString())
	}
	if _, ok := telemetrytest.Attr(sp, otelkv.RoleKey); ok {
		t.Error("role recorded although none was configured")
	}
}

func TestNamespacedStoreRecordsItsModuleAndFullKey(t *testing.T) {
	rec := telemetrytest.New(t)
	red := newRedactor(t, compare.KeyHMAC)
	ns, err := kv.Namespace(memory.New(memory.Config{}), "loldle-emoji")
	if err != nil {
		t.Fatal(err)
	}
	s := instrument(t, rec, ns, otelkv.Config{Redactor: red})
	if _, err := s.List(context.Background(), kv.ListOptions{Prefix: "games:"}); err != nil {
		t.Fatal(err)
	}
	_ = s.Put(context.Background(), "games:1", []byte("x"), kv.PutOptions{})
	if n := len(rec.With("list loldle-emoji", semconv.DBNamespace("loldle-emoji"), semconv.DBResponseReturnedRows(0))); n != 1 {
		t.Errorf("list spans with the module: %d, want 1 (all: %v)", n, names(rec))
	}
	if n := len(rec.With("put loldle-emoji", otelkv.KeyKey.String(red.Key("loldle-emoji:games:1")))); n != 1 {
		t.Errorf("put spans with the full key's hash: %d, want 1", n)
	}
}

func TestSpansAreChildrenOfTheCaller(t *testing.T) {
	rec := telemetrytest.New(t)
	s := instrument(t, rec, memory.New(memory.Config{}), otelkv.Config{})
	ctx, parent := rec.TP.Tracer("test").Start(context.Background(), "caller")
	_, _ = s.Get(ctx, "wordle:a")
	parent.End()
	got := rec.Named("get wordle")[0]
	if got.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("parent %v, want the caller's span %v", got.Parent().SpanID(), parent.SpanContext().SpanID())
	}
}

func TestNilStore(t *testing.T) {
	if _, err := otelkv.New(nil, otelkv.Config{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

func TestGlobalProvidersByDefault(t *testing.T) {
	s, err := otelkv.New(memory.New(memory.Config{}), otelkv.Config{System: otelkv.SystemMemory})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "wordle:a"); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

func names(rec *telemetrytest.Recorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, s.Name())
	}
	return out
}

// TestNoopTracerCostsNothing holds that with OpenTelemetry's no-op tracer
// (what the service runs with when no collector is configured) an
// operation allocates what the wrapped store does and no more: the no-op
// span and its context are skipped (they cost two allocations a call).
func TestNoopTracerCostsNothing(t *testing.T) {
	mem := memory.New(memory.Config{})
	s, err := otelkv.New(mem, otelkv.Config{System: otelkv.SystemMemory},
		otelkv.WithTracerProvider(tracenoop.NewTracerProvider()), otelkv.WithMeterProvider(metricnoop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := testing.AllocsPerRun(100, func() { _, _ = mem.Get(ctx, "wordle:a") })
	wrapped := testing.AllocsPerRun(100, func() { _, _ = s.Get(ctx, "wordle:a") })
	if wrapped > bare {
		t.Errorf("Get through otelkv with no-op providers allocates %v times, the store alone %v", wrapped, bare)
	}
}
