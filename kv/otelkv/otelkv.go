package otelkv

import (
	"cmp"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/internal/forward"
)

// ScopeName is the instrumentation scope of the spans and metrics this
// package records.
const ScopeName = "github.com/kvshadow/kvshadow/kv/otelkv"

// Values of db.system.name for the backends of this project. Workers KV has
// no registered name in the semantic conventions; "cloudflare_kv" is ours.
const (
	SystemCloudflareKV = "cloudflare_kv"
	SystemMongoDB      = "mongodb"
	SystemMemory       = "memory"
	// SystemComposite names the dual-write store as a whole, for the span
	// of the caller's operation above the primary's and the shadow's.
	SystemComposite = "kvshadow"
)

// Values of kvshadow.role. A role names a store's identity in the
// migration, not who is authoritative: in the live stage the shadow is.
const (
	RolePrimary   = "primary"
	RoleShadow    = "shadow"
	RoleComposite = "composite"
)

// Attribute keys of kvshadow's own, shared with the dual-write
// instrumentation so that one dashboard query spans both.
const (
	RoleKey    = attribute.Key("kvshadow.role")
	StageKey   = attribute.Key("kvshadow.stage")
	OutcomeKey = attribute.Key("kvshadow.outcome")
	// KeyKey carries a key as the redaction policy renders it.
	KeyKey = attribute.Key("kvshadow.key")
)

// Metric names; every metric of the project starts with "kvshadow.".
const (
	MetricOperations = "kvshadow.store.operations"
	MetricDuration   = "kvshadow.store.operation.duration"
)

// Config configures New. The zero value instruments a store of unknown
// system and no role, with keys under the default policy (an HMAC with a
// secret drawn for this process).
type Config struct {
	// System is db.system.name: SystemCloudflareKV, SystemMongoDB,
	// SystemMemory, SystemComposite, or any other name; "" means "other".
	System string
	// Role is kvshadow.role; "" leaves it off.
	Role string
	// Redactor renders keys on spans; nil means compare.KeyHMAC with a
	// random secret. Share one Redactor with the dual-write instrumentation
	// so a key's hash is the same on every span of a trace.
	Redactor *compare.Redactor
	// Stage, when set, is called at the start of each operation for
	// kvshadow.stage; it must be cheap and must not block.
	Stage func() string
}

// Option sets the plumbing of New.
type Option func(*options)

type options struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

// WithTracerProvider sets the tracer provider; the default is the global one.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tp = tp }
}

// WithMeterProvider sets the meter provider; the default is the global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.mp = mp }
}

// Store is the instrumented kv.Store. New returns it, or a struct embedding
// it that adds the wrapped store's optional abilities.
type Store struct {
	inner    kv.Store
	cfg      Config
	system   string
	module   string // the inner store's own module, when it is namespaced
	tracer   trace.Tracer
	untraced bool // the tracer is OpenTelemetry's no-op one
	redactor *compare.Redactor
	inst     *instruments
}

var _ kv.Store = (*Store)(nil)

// New instruments s. The result implements kv.ExpiryGetter,
// kv.MetadataStore, kv.BulkGetter, kv.BulkPutter and kv.BulkDeleter exactly
// when s does.
func New(s kv.Store, cfg Config, opts ...Option) (kv.Store, error) {
	if s == nil {
		return nil, errors.New("otelkv: nil store")
	}
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.tp == nil {
		o.tp = otel.GetTracerProvider()
	}
	if o.mp == nil {
		o.mp = otel.GetMeterProvider()
	}
	red := cfg.Redactor
	if red == nil {
		var err error
		if red, err = compare.NewRedactor(compare.KeyHMAC, nil); err != nil {
			return nil, fmt.Errorf("otelkv: %w", err)
		}
	}
	system := cmp.Or(cfg.System, "other")
	st := &Store{
		inner:    s,
		cfg:      cfg,
		system:   system,
		tracer:   o.tp.Tracer(ScopeName),
		redactor: red,
	}
	_, st.untraced = st.tracer.(tracenoop.Tracer)
	if m, ok := s.(interface{ Module() string }); ok {
		st.module = m.Module()
	}
	inst, err := newInstruments(o.mp.Meter(ScopeName), system, cfg.Role)
	if err != nil {
		return nil, err
	}
	st.inst = inst
	return forward.Compose(st, s, forward.Abilities{
		GetEntry:    st.getEntry,
		PutEntry:    st.putEntry,
		GetValue:    st.getValue,
		GetMetadata: st.getMetadata,
		GetMany:     st.getMany,
		PutMany:     st.putMany,
		DeleteMany:  st.deleteMany,
	}), nil
}

// Unwrap returns the instrumented store.
func (s *Store) Unwrap() kv.Store { return s.inner }
