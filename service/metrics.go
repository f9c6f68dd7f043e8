package service

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
	"github.com/kvshadow/kvshadow/membudget"
)

// The instance's own gauges, beside the dual-write store's: what the alert
// rules need to tell an instance that takes no traffic or lags the stage.
const (
	MetricReady              = "kvshadow.service.ready"
	MetricGeneration         = "kvshadow.control.generation"
	MetricDocumentGeneration = "kvshadow.control.document.generation"
	// MetricStoreReachable is 1 while a store answers the readiness probe,
	// per namespace and role: a shadow at 0 is copied to no more (its
	// copies are skipped and their keys kept dirty) while the instance
	// stays ready.
	MetricStoreReachable = "kvshadow.service.store.reachable"
	// MetricBoardReachable is 1 while the control board answers.
	MetricBoardReachable = "kvshadow.control.board.reachable"
)

// The memory budget's gauges (package membudget).
const (
	MetricMemoryInUse   = "kvshadow.memory.in_use"
	MetricMemoryLimit   = "kvshadow.memory.limit"
	MetricMemoryRefused = "kvshadow.memory.refused"
)

// The MongoDB connection gauges (mongokv.Pool), from the driver's pool
// events of every client the instance opened: what MongoDB Atlas counts
// against its connection cap (M0: 500).
const (
	MetricMongoConnectionsOpen  = "kvshadow.mongodb.connections.open"
	MetricMongoConnectionsInUse = "kvshadow.mongodb.connections.in_use"
)

// meterName is the instrumentation scope of the gauges.
const meterName = "github.com/kvshadow/kvshadow/service"

// watchInstance registers the gauges, read at each collection from the
// readiness reasons and the follower's status; Unregister the result at
// shutdown.
func watchInstance(mp metric.MeterProvider, r *readiness) (metric.Registration, error) {
	m := mp.Meter(meterName)
	ready, err1 := m.Int64ObservableGauge(MetricReady, metric.WithUnit("{flag}"),
		metric.WithDescription("1 while the instance is ready for traffic (GET /readyz answers 200), 0 while it is not."))
	gen, err2 := m.Int64ObservableGauge(MetricGeneration, metric.WithUnit("{generation}"),
		metric.WithDescription("The stage generation the instance runs."))
	doc, err3 := m.Int64ObservableGauge(MetricDocumentGeneration, metric.WithUnit("{generation}"),
		metric.WithDescription("The generation of the stage document as the instance last read it."))
	reachable, err4 := m.Int64ObservableGauge(MetricStoreReachable, metric.WithUnit("{flag}"),
		metric.WithDescription("1 while the store answers the readiness probe, 0 while it does not, per namespace and role (primary: Workers KV, shadow: MongoDB)."))
	board, err5 := m.Int64ObservableGauge(MetricBoardReachable, metric.WithUnit("{flag}"),
		metric.WithDescription("1 while the control board (the stage document in MongoDB) answers, 0 while it does not."))
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st := r.follower.Status()
		o.ObserveInt64(ready, oneIf(isReady(r.reasons(ctx))))
		o.ObserveInt64(gen, int64(st.Generation))
		o.ObserveInt64(doc, int64(st.Document.Generation))
		o.ObserveInt64(board, oneIf(st.BoardErr == "" && !st.Detached))
		for k, up := range r.reachable() {
			o.ObserveInt64(reachable, oneIf(up), metric.WithAttributes(semconv.DBNamespace(k.namespace), otelkv.RoleKey.String(k.role.String())))
		}
		return nil
	}, ready, gen, doc, reachable, board)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return reg, nil
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// watchMemory registers the memory budget's gauges, read at each collection;
// Unregister the result at shutdown.
func watchMemory(mp metric.MeterProvider, b *membudget.Budget) (metric.Registration, error) {
	m := mp.Meter(meterName)
	inUse, err1 := m.Int64ObservableGauge(MetricMemoryInUse, metric.WithUnit("By"),
		metric.WithDescription("Bytes held of the memory budget: bodies being read, values being answered, tee batches, copies waiting in the lanes."))
	limit, err2 := m.Int64ObservableGauge(MetricMemoryLimit, metric.WithUnit("By"),
		metric.WithDescription("Bytes the requests may hold together: --memory-budget less the reserve the process keeps for itself."))
	refused, err3 := m.Int64ObservableCounter(MetricMemoryRefused, metric.WithUnit("{request}"),
		metric.WithDescription("Requests for bytes the budget refused after its wait: each answered 503 with Retry-After."))
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(inUse, b.InUse())
		o.ObserveInt64(limit, b.Limit())
		o.ObserveInt64(refused, int64(b.Refused()))
		return nil
	}, inUse, limit, refused)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return reg, nil
}

// watchPool registers the MongoDB connection gauges, read at each
// collection; Unregister the result at shutdown.
func watchPool(mp metric.MeterProvider, p *mongokv.Pool) (metric.Registration, error) {
	m := mp.Meter(meterName)
	open, err1 := m.Int64ObservableGauge(MetricMongoConnectionsOpen, metric.WithUnit("{connection}"),
		metric.WithDescription("MongoDB connections this instance holds open, over all its driver clients (shadow and control board)."))
	inUse, err2 := m.Int64ObservableGauge(MetricMongoConnectionsInUse, metric.WithUnit("{connection}"),
		metric.WithDescription("MongoDB connections checked out by an operation now, over all this instance's driver clients."))
	for _, err := range []error{err1, err2} {
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := p.Stats()
		o.ObserveInt64(open, st.Open)
		o.ObserveInt64(inUse, st.InUse)
		return nil
	}, open, inUse)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return reg, nil
}
