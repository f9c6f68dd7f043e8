package otelkv

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/metricbatch"
	"github.com/kvshadow/kvshadow/kv"
)

// op is one kind of store call; its name is db.operation.name.
type op int

const (
	opGet op = iota
	opPut
	opDelete
	opList
	opGetEntry
	opGetValue
	opGetMetadata
	opPutEntry
	opGetMany
	opPutMany
	opDeleteMany
	numOps
)

var opNames = [numOps]string{"get", "put", "delete", "list", "get_entry", "get_value", "get_metadata", "put_entry", "get_many", "put_many", "delete_many"}

// outcome is kvshadow.outcome: "ok", or the class of the error. A missing
// key is an outcome, not a failure: its span keeps an unset status.
type outcome int

const (
	outOK outcome = iota
	outNotFound
	outTimeout
	outCanceled
	outUnavailable
	outClosed
	outInvalidInput
	outOther
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "not_found", "timeout", "canceled", "unavailable", "closed", "invalid_input", "other"}

func outcomeOf(err error) outcome {
	if err == nil {
		return outOK
	}
	if errors.Is(err, kv.ErrNotFound) {
		return outNotFound
	}
	switch compare.ErrorClass(err) {
	case "timeout":
		return outTimeout
	case "canceled":
		return outCanceled
	case "unavailable":
		return outUnavailable
	case "closed":
		return outClosed
	case "invalid_input":
		return outInvalidInput
	}
	return outOther
}

// failed reports whether the outcome marks the span as an error.
func (o outcome) failed() bool { return o != outOK && o != outNotFound }

// DurationBuckets are the boundaries, in seconds, of the duration
// histograms here and in package dualwriteotel: a memory read is well under
// a millisecond, a Workers KV write across the world can take seconds.
var DurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// instruments holds the metrics and, because a store's backend and role
// never change, every attribute set and start option it can need, built
// once so that recording allocates nothing. The operations are counted in
// counts, the durations batched, as the package doc says.
type instruments struct {
	ops    metric.Int64ObservableCounter
	dur    metric.Float64Histogram
	counts [numOps][numOutcomes]atomic.Int64
	obs    [numOps][numOutcomes][]metric.ObserveOption
	rec    [numOps][numOutcomes][]metric.RecordOption
	start  [numOps][]trace.SpanStartOption
	batch  metricbatch.Batch[duration]
	record func([]duration) // recordDurations
}

func newInstruments(m metric.Meter, system, role string) (*instruments, error) {
	in := &instruments{}
	ops, err := m.Int64ObservableCounter(MetricOperations,
		metric.WithUnit("{operation}"),
		metric.WithDescription("Store operations, by backend, role, operation and outcome."))
	if err != nil {
		return nil, fmt.Errorf("otelkv: %w", err)
	}
	dur, err := m.Float64Histogram(MetricDuration,
		metric.WithUnit("s"),
		metric.WithDescription("Duration of store operations, by backend, role, operation and outcome."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("otelkv: %w", err)
	}
	in.ops, in.dur = ops, dur
	in.record = in.recordDurations
	base := []attribute.KeyValue{semconv.DBSystemNameKey.String(system)}
	if role != "" {
		base = append(base, RoleKey.String(role))
	}
	for o := range numOps {
		opAttrs := append(base[:len(base):len(base)], semconv.DBOperationName(opNames[o]))
		in.start[o] = []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(opAttrs...),
		}
		for oc := range numOutcomes {
			set := attribute.NewSet(append(opAttrs[:len(opAttrs):len(opAttrs)], OutcomeKey.String(outcomeNames[oc]))...)
			opt := metric.WithAttributeSet(set)
			in.obs[o][oc] = []metric.ObserveOption{opt}
			in.rec[o][oc] = []metric.RecordOption{opt}
		}
	}
	if _, err := m.RegisterCallback(in.collect, ops); err != nil {
		return nil, fmt.Errorf("otelkv: %w", err)
	}
	return in, nil
}

// collect is the meter's callback, run before it reads the histogram: the
// durations still batched go to the histogram first (see the package doc).
func (in *instruments) collect(_ context.Context, o metric.Observer) error {
	in.batch.Flush(in.record)
	for op := range numOps {
		for oc := range numOutcomes {
			if n := in.counts[op][oc].Load(); n > 0 {
				o.ObserveInt64(in.ops, n, in.obs[op][oc]...)
			}
		}
	}
	return nil
}
