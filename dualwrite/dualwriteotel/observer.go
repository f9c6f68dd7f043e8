package dualwriteotel

import (
	"cmp"
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// Option sets the plumbing of New and NewStore.
type Option func(*options)

type options struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	storeOpts []dualwrite.Option
}

// WithTracerProvider sets the tracer provider; the default is the global one.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.tp = tp } }

// WithMeterProvider sets the meter provider; the default is the global one.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.mp = mp } }

// WithStoreOptions passes options (clock, logger) to dualwrite.New when
// NewStore builds the store; New ignores them.
func WithStoreOptions(opts ...dualwrite.Option) Option {
	return func(o *options) { o.storeOpts = append(o.storeOpts, opts...) }
}

func resolve(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.tp == nil {
		o.tp = otel.GetTracerProvider()
	}
	if o.mp == nil {
		o.mp = otel.GetMeterProvider()
	}
	return o
}

// Observer implements dualwrite.Observer with spans and metrics. Give it
// to dualwrite.New with dualwrite.WithObserver, then call Watch with the
// Store for the gauges. One Observer serves one Store.
type Observer struct {
	tracer trace.Tracer
	meter  metric.Meter
	inst   *instruments
	stage  atomic.Uint32             // dualwrite.Stage, for span attributes
	breakr [2]atomic.Pointer[string] // by dualwrite.Role: the breaker's state
}

var _ dualwrite.Observer = (*Observer)(nil)

// New returns an Observer recording to the configured providers.
func New(opts ...Option) (*Observer, error) {
	o := resolve(opts)
	m := o.mp.Meter(ScopeName)
	inst, err := newInstruments(m)
	if err != nil {
		return nil, err
	}
	obs := &Observer{tracer: o.tp.Tracer(ScopeName), meter: m, inst: inst}
	closed := string(dualwrite.BreakerClosed)
	for i := range obs.breakr {
		obs.breakr[i].Store(&closed)
	}
	return obs, nil
}

// Stage returns the name of the stage the Observer last saw, for
// otelkv.Config.Stage. It is "off" until Watch or a stage change.
func (o *Observer) Stage() string { return dualwrite.Stage(o.stage.Load()).String() }

func (o *Observer) breakerState(r dualwrite.Role) string {
	if int(r) >= len(o.breakr) {
		return ""
	}
	return *o.breakr[r].Load()
}

// async is the span of one asynchronous operation, carried in the context
// that AsyncContext returns until OpDone or Dropped ends it.
type async struct {
	span  trace.Span
	ended atomic.Bool
}

type asyncKey struct{}

// asyncOf is AsyncContext's span in ctx, looked for only where a span
// records: a failed search through context.WithoutCancel allocates.
func (o *Observer) asyncOf(ctx context.Context) *async {
	if _, off := o.tracer.(tracenoop.Tracer); off || !trace.SpanFromContext(ctx).IsRecording() {
		return nil
	}
	a, _ := ctx.Value(asyncKey{}).(*async)
	return a
}

// end ends the span once: a dropped operation may be reported after its
// OpDone, with the caller's context rather than this one, and never twice
// with this one, but the guard costs nothing.
func (a *async) end() bool { return a.ended.CompareAndSwap(false, true) }

var spanNames = map[dualwrite.Op]string{
	dualwrite.OpPut: SpanPut, dualwrite.OpDelete: SpanDelete,
	dualwrite.OpCompare: SpanCompare, dualwrite.OpRepair: SpanRepair,
}

// asyncStart starts every asynchronous operation's span. Its attributes
// are set once it records, so that one that does not (tracing off, or not
// sampled: samplers here read neither attributes nor links) costs nothing.
var asyncStart = []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal)}

// AsyncContext implements dualwrite.Observer: the operation's span starts a
// new trace linked to the caller's span (see the package doc).
func (o *Observer) AsyncContext(caller context.Context, op dualwrite.Op) context.Context {
	ctx := context.WithoutCancel(caller)
	if _, off := o.tracer.(tracenoop.Tracer); off {
		return ctx // tracing off: its no-op span would cost two allocations
	}
	name, ok := spanNames[op]
	if !ok {
		name = "dualwrite." + string(op)
	}
	ctx, span := o.tracer.Start(ctx, name, asyncStart...)
	if !span.IsRecording() {
		return ctx // nothing to end or annotate
	}
	span.SetAttributes(OperationKey.String(string(op)), otelkv.StageKey.String(o.Stage()))
	if link := trace.LinkFromContext(caller); link.SpanContext.IsValid() {
		span.AddLink(link)
	}
	return context.WithValue(ctx, asyncKey{}, &async{span: span})
}

// OpDone implements dualwrite.Observer.
func (o *Observer) OpDone(ctx context.Context, e dualwrite.OpEvent) {
	set := o.inst.sets.get(mAsync, string(e.Op), e.Role.String(), string(e.Outcome))
	o.inst.asyncOps.Add(ctx, 1, set.add...)
	o.inst.asyncDur.Record(ctx, e.Duration.Seconds(), set.rec...)
	o.inst.asyncWait.Record(ctx, e.Waited.Seconds(), set.rec...)
	a := o.asyncOf(ctx)
	if a == nil || !a.end() {
		return
	}
	a.span.SetAttributes(
		otelkv.RoleKey.String(e.Role.String()),
		otelkv.OutcomeKey.String(string(e.Outcome)),
		BreakerStateKey.String(o.breakerState(e.Role)),
	)
	if e.Outcome != dualwrite.OutcomeOK {
		class := cmp.Or(e.ErrorClass, string(e.Outcome))
		a.span.SetAttributes(semconv.ErrorTypeKey.String(class))
		a.span.SetStatus(codes.Error, class)
	}
	a.span.End()
}

// Dropped implements dualwrite.Observer. A drop reported with the
// caller's context, while the caller's span is still open (a full lane or
// an open breaker at enqueue), also becomes an event on that span, so the
// caller's trace shows that its write did not reach the other store.
func (o *Observer) Dropped(ctx context.Context, e dualwrite.DropEvent) {
	set := o.inst.sets.get(mDrops, string(e.Op), e.Role.String(), string(e.Reason))
	o.inst.drops.Add(ctx, 1, set.add...)
	attrs := []attribute.KeyValue{
		OperationKey.String(string(e.Op)),
		otelkv.RoleKey.String(e.Role.String()),
		DropReasonKey.String(string(e.Reason)),
	}
	if a := o.asyncOf(ctx); a != nil {
		if a.end() {
			a.span.SetAttributes(attrs...)
			a.span.SetAttributes(BreakerStateKey.String(o.breakerState(e.Role)))
			a.span.SetStatus(codes.Error, "dropped: "+string(e.Reason))
			a.span.End()
		}
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("kvshadow.dropped", trace.WithAttributes(attrs...))
	}
}

// Compared implements dualwrite.Observer.
func (o *Observer) Compared(ctx context.Context, e dualwrite.CompareEvent) {
	set := o.inst.sets.get(mCompare, string(e.Kind), e.Namespace, "")
	o.inst.comparisons.Add(ctx, 1, set.add...)
	if a := o.asyncOf(ctx); a != nil {
		a.span.SetAttributes(KindKey.String(string(e.Kind)), semconv.DBNamespace(e.Namespace))
	}
}

// Verified implements dualwrite.Observer: a divergence is counted once a
// verification confirms it.
func (o *Observer) Verified(ctx context.Context, e dualwrite.VerifyEvent) {
	set := o.inst.sets.get(mCompare, string(e.Kind), e.Namespace, "")
	o.inst.verified.Add(ctx, 1, set.add...)
	if e.Kind.Divergent() {
		o.inst.divergences.Add(ctx, 1, set.add...)
	}
}

// Repaired implements dualwrite.Observer.
func (o *Observer) Repaired(ctx context.Context, e dualwrite.RepairEvent) {
	set := o.inst.sets.get(mRepair, string(e.Outcome), e.Namespace, "")
	o.inst.repairs.Add(ctx, 1, set.add...)
	if a := o.asyncOf(ctx); a != nil {
		a.span.SetAttributes(RepairOutcomeKey.String(string(e.Outcome)), semconv.DBNamespace(e.Namespace))
	}
}

// BreakerChanged implements dualwrite.Observer.
func (o *Observer) BreakerChanged(e dualwrite.BreakerEvent) {
	if int(e.Role) < len(o.breakr) {
		to := string(e.To)
		o.breakr[e.Role].Store(&to)
	}
	set := o.inst.sets.get(mBreaker, e.Role.String(), string(e.From), string(e.To))
	o.inst.transitions.Add(context.Background(), 1, set.add...)
}

// StageChanged implements dualwrite.Observer.
func (o *Observer) StageChanged(e dualwrite.StageEvent) { o.stage.Store(uint32(e.To)) }
