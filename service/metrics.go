package service

import (
	"context"
	"errors"
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

// watch registers the gauges, read at each collection from the readiness
// reasons, the follower's status, the memory budget and the MongoDB pool
// (when there is one); Unregister the result at shutdown.
func watch(mp metric.MeterProvider, r *readiness, mem *membudget.Budget, pool *mongokv.Pool) (metric.Registration, error) {
	m := mp.Meter(meterName)
	var errs []error
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	ready := gauge(MetricReady, "{flag}", "1 while the instance is ready for traffic (GET /readyz answers 200), 0 while it is not.")
	gen := gauge(MetricGeneration, "{generation}", "The stage generation the instance runs.")
	doc := gauge(MetricDocumentGeneration, "{generation}", "The generation of the stage document as the instance last read it.")
	reachable := gauge(MetricStoreReachable, "{flag}",
		"1 while the store answers the readiness probe, 0 while it does not, per namespace and role (primary: Workers KV, shadow: MongoDB).")
	board := gauge(MetricBoardReachable, "{flag}", "1 while the control board (the stage document in MongoDB) answers, 0 while it does not.")
	inUse := gauge(MetricMemoryInUse, "By",
		"Bytes held of the memory budget: bodies being read, values being answered, tee batches, copies waiting in the lanes.")
	limit := gauge(MetricMemoryLimit, "By", "Bytes the requests may hold together: --memory-budget less the reserve the process keeps for itself.")
	refused, err := m.Int64ObservableCounter(MetricMemoryRefused, metric.WithUnit("{request}"),
		metric.WithDescription("Requests for bytes the budget refused after its wait: each answered 503 with Retry-After."))
	errs = append(errs, err)
	open := gauge(MetricMongoConnectionsOpen, "{connection}",
		"MongoDB connections this instance holds open, over all its driver clients (shadow and control board).")
	checkedOut := gauge(MetricMongoConnectionsInUse, "{connection}",
		"MongoDB connections checked out by an operation now, over all this instance's driver clients.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("service: %w", err)
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
		o.ObserveInt64(inUse, mem.InUse())
		o.ObserveInt64(limit, mem.Limit())
		o.ObserveInt64(refused, int64(mem.Refused()))
		if pool != nil {
			ps := pool.Stats()
			o.ObserveInt64(open, ps.Open)
			o.ObserveInt64(checkedOut, ps.InUse)
		}
		return nil
	}, ready, gen, doc, reachable, board, inUse, limit, refused, open, checkedOut)
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
