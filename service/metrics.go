package service

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// The instance's own gauges, beside the dual-write store's: what the alert
// rules need to tell an instance that takes no traffic or lags the stage.
const (
	MetricReady              = "kvshadow.service.ready"
	MetricGeneration         = "kvshadow.control.generation"
	MetricDocumentGeneration = "kvshadow.control.document.generation"
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
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		var up int64
		if len(r.reasons(ctx)) == 0 {
			up = 1
		}
		st := r.follower.Status()
		o.ObserveInt64(ready, up)
		o.ObserveInt64(gen, int64(st.Generation))
		o.ObserveInt64(doc, int64(st.Document.Generation))
		return nil
	}, ready, gen, doc)
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	return reg, nil
}
