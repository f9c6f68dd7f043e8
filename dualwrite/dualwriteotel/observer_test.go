package dualwriteotel_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

var (
	roleComposite = otelkv.RoleKey.String(otelkv.RoleComposite)
	rolePrimary   = otelkv.RoleKey.String(otelkv.RolePrimary)
	roleShadow    = otelkv.RoleKey.String(otelkv.RoleShadow)
)

func one(t *testing.T, spans []sdktrace.ReadOnlySpan, what string) sdktrace.ReadOnlySpan {
	t.Helper()
	if len(spans) != 1 {
		t.Fatalf("%s: %d spans, want 1", what, len(spans))
	}
	return spans[0]
}

// The caller's trace holds the composite's span and, under it, the
// authoritative call; the shadow's write is a trace of its own whose root
// links back to the composite's span.
func TestShadowSpansLinkToTheCaller(t *testing.T) {
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx, bot := f.caller("bot.handle")
	if err := f.st.KV.Put(ctx, "wordle:games:42", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	bot.End()
	f.flush(t)

	composite := one(t, f.rec.With("put wordle", roleComposite), "composite put")
	if composite.Parent().SpanID() != bot.SpanContext().SpanID() {
		t.Error("the composite's span is not a child of the caller's")
	}
	if v, _ := telemetrytest.Attr(composite, semconv.DBSystemNameKey); v.AsString() != otelkv.SystemComposite {
		t.Errorf("composite db.system.name = %q", v.AsString())
	}
	primary := one(t, f.rec.With("put wordle", rolePrimary, otelkv.StageKey.String("dualwrite")), "primary put")
	if primary.Parent().SpanID() != composite.SpanContext().SpanID() {
		t.Error("the authoritative call is not a child of the composite's span")
	}

	async := one(t, f.rec.With(dualwriteotel.SpanPut, roleShadow, otelkv.OutcomeKey.String("ok"),
		dualwriteotel.OperationKey.String("put"), otelkv.StageKey.String("dualwrite"),
		dualwriteotel.BreakerStateKey.String("closed")), "async put")
	if async.Parent().IsValid() {
		t.Error("the asynchronous span has a parent; want a new root")
	}
	if async.SpanContext().TraceID() == bot.SpanContext().TraceID() {
		t.Error("the asynchronous span is in the caller's trace")
	}
	links := async.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != composite.SpanContext().SpanID() ||
		links[0].SpanContext.TraceID() != bot.SpanContext().TraceID() {
		t.Errorf("links %+v, want the composite's span %v", links, composite.SpanContext())
	}
	shadow := one(t, f.rec.With("put wordle", roleShadow), "shadow put")
	if shadow.Parent().SpanID() != async.SpanContext().SpanID() {
		t.Error("the shadow's call is not a child of the asynchronous span")
	}

	rm := f.rec.Collect(t)
	if n, _ := telemetrytest.Value(rm, dualwriteotel.MetricAsyncOperations, dualwriteotel.OperationKey.String("put"), roleShadow, otelkv.OutcomeKey.String("ok")); n != 1 {
		t.Errorf("async puts = %v, want 1", n)
	}
	if n, _ := telemetrytest.Value(rm, otelkv.MetricOperations, roleShadow, semconv.DBOperationName("put"), semconv.DBSystemNameKey.String("memory")); n != 1 {
		t.Errorf("shadow store puts = %v, want 1", n)
	}
	if v, ok := telemetrytest.Value(rm, dualwriteotel.MetricStage); !ok || v != float64(dualwrite.DualWrite) {
		t.Errorf("stage gauge = %v (%v), want %d", v, ok, dualwrite.DualWrite)
	}
}

func TestComparisonsAndDivergencesByKindAndNamespace(t *testing.T) {
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	// In both stores: a match. In the primary alone: missing in the shadow.
	if err := f.st.KV.Put(ctx, "wordle:same", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	if err := f.primary.Put(ctx, "trading:only-primary", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rctx, bot := f.caller("bot.read")
	for _, k := range []string{"wordle:same", "trading:only-primary"} {
		if _, err := f.st.KV.Get(rctx, k); err != nil {
			t.Fatal(err)
		}
	}
	bot.End()
	f.flush(t)
	// The comparison's difference is suspected; a verification read
	// confirms it.
	if _, err := f.st.Dual.Settle(ctx); err != nil {
		t.Fatal(err)
	}

	rm := f.rec.Collect(t)
	kind := func(k string) attribute.KeyValue { return dualwriteotel.KindKey.String(k) }
	for _, c := range []struct {
		metric string
		attrs  []attribute.KeyValue
		want   float64
	}{
		{dualwriteotel.MetricComparisons, []attribute.KeyValue{kind("match"), semconv.DBNamespace("wordle")}, 1},
		{dualwriteotel.MetricComparisons, []attribute.KeyValue{kind("suspected"), semconv.DBNamespace("trading")}, 1},
		{dualwriteotel.MetricVerifications, []attribute.KeyValue{kind("missing_in_shadow"), semconv.DBNamespace("trading")}, 1},
		{dualwriteotel.MetricDivergences, []attribute.KeyValue{kind("missing_in_shadow"), semconv.DBNamespace("trading")}, 1},
		{dualwriteotel.MetricDivergences, []attribute.KeyValue{kind("match")}, 0},
		{dualwriteotel.MetricAsyncOperations, []attribute.KeyValue{dualwriteotel.OperationKey.String("compare"), roleShadow}, 2},
	} {
		if got, _ := telemetrytest.Value(rm, c.metric, c.attrs...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.metric, c.attrs, got, c.want)
		}
	}
	cmp := one(t, f.rec.With(dualwriteotel.SpanCompare, kind("suspected"), semconv.DBNamespace("trading"),
		otelkv.StageKey.String("shadow")), "divergent comparison")
	if l := cmp.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != bot.SpanContext().TraceID() {
		t.Errorf("comparison links %+v, want one into the caller's trace", l)
	}
	read := one(t, childrenOf(f.rec.Ended(), cmp.SpanContext()), "the comparison's read")
	if v, _ := telemetrytest.Attr(read, otelkv.RoleKey); v.AsString() != "shadow" || read.Name() != "get_entry trading" {
		t.Errorf("the comparison's read: %s role %q", read.Name(), v.AsString())
	}
}

// With the shadow down, the first failures are shadow errors, then the
// breaker opens and the writes are dropped on the caller's path; the
// counts, the breaker's gauge and transitions, the dirty keys and the
// caller's span all say so.
func TestBreakerOpenUnderFault(t *testing.T) {
	faulty, err := kvfault.New(nil2mem(), kvfault.Config{Name: "mongodb", Outage: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, faulty, dualwrite.Config{Stage: dualwrite.DualWrite, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 2}})
	ctx := context.Background()
	for _, k := range []string{"wordle:a", "wordle:b"} {
		if err := f.st.KV.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		f.flush(t)
	}
	cctx, bot := f.caller("bot.write")
	for _, k := range []string{"wordle:c", "wordle:d", "wordle:e"} {
		if err := f.st.KV.Put(cctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatalf("the caller felt the shadow's outage: %v", err)
		}
	}
	bot.End()
	f.flush(t)

	rm := f.rec.Collect(t)
	reason := func(r string) attribute.KeyValue { return dualwriteotel.DropReasonKey.String(r) }
	for _, c := range []struct {
		metric string
		attrs  []attribute.KeyValue
		want   float64
	}{
		{dualwriteotel.MetricDrops, []attribute.KeyValue{reason("shadow_error"), roleShadow, dualwriteotel.OperationKey.String("put")}, 2},
		{dualwriteotel.MetricDrops, []attribute.KeyValue{reason("breaker_open"), roleShadow}, 3},
		{dualwriteotel.MetricBreakerState, []attribute.KeyValue{roleShadow}, 2},
		{dualwriteotel.MetricBreakerState, []attribute.KeyValue{rolePrimary}, 0},
		{dualwriteotel.MetricDirtyKeys, nil, 5},
		{dualwriteotel.MetricAsyncOperations, []attribute.KeyValue{otelkv.OutcomeKey.String("error"), roleShadow}, 2},
		{otelkv.MetricOperations, []attribute.KeyValue{roleShadow, otelkv.OutcomeKey.String("unavailable")}, 2},
	} {
		if got, _ := telemetrytest.Value(rm, c.metric, c.attrs...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.metric, c.attrs, got, c.want)
		}
	}
	failed := f.rec.With(dualwriteotel.SpanPut, otelkv.OutcomeKey.String("error"))
	if len(failed) != 2 || failed[0].Status().Code != codes.Error || failed[0].Status().Description != "unavailable" {
		t.Errorf("failed async spans: %d, status %+v", len(failed), failed[0].Status())
	}
	composite := f.rec.With("put wordle", roleComposite)
	var events int
	for _, s := range composite {
		for _, e := range s.Events() {
			if e.Name == "kvshadow.dropped" && telemetrytest.HasAll(e.Attributes, []attribute.KeyValue{reason("breaker_open")}) {
				events++
			}
		}
	}
	if events != 3 {
		t.Errorf("caller spans with a breaker_open drop event: %d, want 3", events)
	}

	// Breaker events arrive on the store's own goroutine; Close delivers
	// every one before it returns.
	if err := f.st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rm = f.rec.Collect(t)
	if n, _ := telemetrytest.Value(rm, dualwriteotel.MetricBreakerTransitions, roleShadow,
		dualwriteotel.BreakerPreviousKey.String("closed"), dualwriteotel.BreakerStateKey.String("open")); n != 1 {
		t.Errorf("closed->open transitions = %v, want 1", n)
	}
	if _, ok := telemetrytest.Value(rm, dualwriteotel.MetricDirtyKeys); ok {
		t.Error("gauges still reported after Close")
	}
}

// A lane that cannot take another operation drops the write at once; the
// gauges show the lane full while it is.
func TestLaneFullUnderFault(t *testing.T) {
	gate := newGateStore()
	f := newFixture(t, gate, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, LaneDepth: 1})
	t.Cleanup(gate.open)
	ctx := context.Background()
	if err := f.st.KV.Put(ctx, "wordle:1", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	<-gate.entered // the worker holds the first write
	if err := f.st.KV.Put(ctx, "wordle:2", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, bot := f.caller("bot.write")
	if err := f.st.KV.Put(cctx, "wordle:3", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	bot.End()

	rm := f.rec.Collect(t)
	for _, c := range []struct {
		metric string
		attrs  []attribute.KeyValue
		want   float64
	}{
		{dualwriteotel.MetricDrops, []attribute.KeyValue{dualwriteotel.DropReasonKey.String("lane_full"), roleShadow, dualwriteotel.OperationKey.String("put")}, 1},
		{dualwriteotel.MetricLaneDepth, nil, 1},
		{dualwriteotel.MetricQueueDepth, nil, 2},
		{dualwriteotel.MetricQueueBytes, nil, 2},
		{dualwriteotel.MetricDirtyKeys, nil, 1},
	} {
		if got, _ := telemetrytest.Value(rm, c.metric, c.attrs...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.metric, c.attrs, got, c.want)
		}
	}
	third := f.rec.With("put wordle", roleComposite)
	var dropped bool
	for _, s := range third {
		for _, e := range s.Events() {
			dropped = dropped || e.Name == "kvshadow.dropped"
		}
	}
	if !dropped {
		t.Error("no caller span carries the lane_full drop")
	}
	gate.open()
	f.flush(t)
}

// A write the shadow failed is repaired later: the repair's span holds the
// authoritative read, the other store's read and the copy, and the repairs are counted by outcome.
func TestRepairSpansAndCounts(t *testing.T) {
	faulty, err := kvfault.New(nil2mem(), kvfault.Config{Outage: true})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, faulty, dualwrite.Config{Stage: dualwrite.DualWrite, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100}})
	ctx := context.Background()
	if err := f.st.KV.Put(ctx, "loldle-emoji:7", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	faulty.SetOutage(false)
	// The first pass sees the difference and holds it; the second, finding
	// it unchanged, copies (dualwrite's confirmation rule).
	for pass := range 2 {
		if n := f.st.Dual.RepairDirty(); n != 1 {
			t.Fatalf("pass %d: RepairDirty queued %d, want 1: %+v", pass, n, f.st.Dual.Stats())
		}
		f.flush(t)
	}

	rep := one(t, f.rec.With(dualwriteotel.SpanRepair, dualwriteotel.RepairOutcomeKey.String("copied"),
		semconv.DBNamespace("loldle-emoji"), roleShadow), "repair")
	var names []string
	for _, c := range childrenOf(f.rec.Ended(), rep.SpanContext()) {
		role, _ := telemetrytest.Attr(c, otelkv.RoleKey)
		names = append(names, c.Name()+"/"+role.AsString())
	}
	// The authoritative read, the other store's read that checks the held
	// difference, and the copy.
	if len(names) != 3 || names[0] != "get_entry loldle-emoji/primary" || names[1] != "get_many loldle-emoji/shadow" || names[2] != "put loldle-emoji/shadow" {
		t.Errorf("the repair's calls: %v", names)
	}
	rm := f.rec.Collect(t)
	if n, _ := telemetrytest.Value(rm, dualwriteotel.MetricRepairs, dualwriteotel.RepairOutcomeKey.String("copied"), semconv.DBNamespace("loldle-emoji")); n != 1 {
		t.Errorf("copied repairs = %v, want 1", n)
	}
	if n, _ := telemetrytest.Value(rm, dualwriteotel.MetricDirtyKeys); n != 0 {
		t.Errorf("dirty keys after repair = %v", n)
	}
}

func TestStageChangesReachSpansAndGauge(t *testing.T) {
	f := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	if err := f.st.Dual.SetStage(ctx, dualwrite.Shadow); err != nil {
		t.Fatal(err)
	}
	if err := f.st.KV.Delete(ctx, "wordle:x"); err != nil {
		t.Fatal(err)
	}
	f.flush(t)
	if f.st.Observer.Stage() != "shadow" {
		t.Errorf("observer stage %q", f.st.Observer.Stage())
	}
	one(t, f.rec.With("delete wordle", rolePrimary, otelkv.StageKey.String("shadow")), "primary delete in the shadow stage")
	one(t, f.rec.With(dualwriteotel.SpanDelete, otelkv.StageKey.String("shadow")), "async delete in the shadow stage")
	if v, _ := telemetrytest.Value(f.rec.Collect(t), dualwriteotel.MetricStage); v != float64(dualwrite.Shadow) {
		t.Errorf("stage gauge %v, want %d", v, dualwrite.Shadow)
	}
}

func TestNewStoreRefusesMissingStores(t *testing.T) {
	_, err := dualwriteotel.NewStore(dualwrite.Config{Primary: nil2mem()}, dualwriteotel.Config{})
	if !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Errorf("err = %v, want ErrInvalidConfig", err)
	}
	m := nil2mem()
	_, err = dualwriteotel.NewStore(dualwrite.Config{Primary: m, Shadow: m}, dualwriteotel.Config{})
	if !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Errorf("same store twice: err = %v, want ErrInvalidConfig", err)
	}
}
