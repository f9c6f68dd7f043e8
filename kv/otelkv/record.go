package otelkv

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kvshadow/kvshadow/kv"
)

// noSpan is the span of an operation that no tracer records.
var noSpan = trace.SpanFromContext(context.Background())

type call struct {
	ctx   context.Context
	span  trace.Span
	op    op
	began time.Time
}

// begin starts the operation's span. The span starts under the bare
// operation name with the attributes that never change; the module, the
// redacted key and the stage are added only when the span records, so an
// unsampled or no-op span costs no HMAC and no string building.
func (s *Store) begin(ctx context.Context, o op, module, key string) call {
	if s.untraced {
		// The no-op tracer's span only carries the caller's span context,
		// which ctx already does: skipping it saves the two allocations of
		// putting it in a new context, on every operation.
		return call{ctx: ctx, span: noSpan, op: o, began: time.Now()}
	}
	ctx, span := s.tracer.Start(ctx, opNames[o], s.inst.start[o]...)
	if span.IsRecording() {
		if s.module != "" {
			module = s.module
		}
		attrs := make([]attribute.KeyValue, 0, 3)
		if module != "" {
			span.SetName(opNames[o] + " " + module)
			attrs = append(attrs, semconv.DBNamespace(module))
		}
		if key != "" {
			attrs = append(attrs, KeyKey.String(s.redactor.Key(s.fullKey(key))))
		}
		if s.cfg.Stage != nil {
			if st := s.cfg.Stage(); st != "" {
				attrs = append(attrs, StageKey.String(st))
			}
		}
		span.SetAttributes(attrs...)
	}
	return call{ctx: ctx, span: span, op: o, began: time.Now()}
}

// fullKey gives the redactor the key as stored, so that a namespaced
// store's keys hash as they do on the unnamespaced spans of the same trace.
func (s *Store) fullKey(key string) string {
	if s.module != "" {
		return s.module + ":" + key
	}
	return key
}

// end records the metrics and closes the span. Only the error's class is
// recorded: its text can quote a key or a URI.
func (s *Store) end(c call, err error, extra ...attribute.KeyValue) {
	oc := outcomeOf(err)
	s.inst.counts[c.op][oc].Add(1)
	secs := time.Since(c.began).Seconds()
	if c.span.SpanContext().IsSampled() {
		s.inst.dur.Record(c.ctx, secs, s.inst.rec[c.op][oc]...)
	} else {
		s.inst.batch.Add(duration{op: c.op, outcome: oc, seconds: secs}, s.inst.record)
	}
	if c.span.IsRecording() {
		attrs := append(extra, OutcomeKey.String(outcomeNames[oc]))
		if oc.failed() {
			attrs = append(attrs, semconv.ErrorTypeKey.String(outcomeNames[oc]))
			c.span.SetStatus(codes.Error, outcomeNames[oc])
		}
		c.span.SetAttributes(attrs...)
	}
	c.span.End()
}

// moduleOf is the module the keys of all items share, or "" when they span
// several.
func moduleOf[T any](items []T, key func(T) string) string {
	if len(items) == 0 {
		return ""
	}
	mod := kv.ModuleOf(key(items[0]))
	for _, it := range items[1:] {
		if kv.ModuleOf(key(it)) != mod {
			return ""
		}
	}
	return mod
}

func keyOf(k string) string      { return k }
func entryKey(e kv.Entry) string { return e.Key }
