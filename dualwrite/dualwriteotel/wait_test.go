package dualwriteotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/dualwrite/dualwriteotel"
	"github.com/kvshadow/kvshadow/internal/telemetry/telemetrytest"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// A write queued behind one the shadow holds waits in its lane for as long
// as the clock moves meanwhile; the wait histogram records both writes' waits
// under the attributes of the duration histogram, and the lane gauges give
// the configured capacity.
func TestLaneWaitAndCapacity(t *testing.T) {
	const held = 250 * time.Millisecond
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	gate := newGateStore()
	f := newFixture(t, gate, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, LaneDepth: 4, RepairInterval: time.Hour},
		dualwriteotel.WithStoreOptions(dualwrite.WithClock(clk)))
	t.Cleanup(gate.open)
	ctx := context.Background()
	for _, k := range []string{"wordle:1", "wordle:2"} {
		if err := f.st.KV.Put(ctx, k, []byte("v"), kv.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	<-gate.entered // the worker holds the first write; the second waits
	clk.Advance(held)
	gate.open()
	f.flush(t)

	rm := f.rec.Collect(t)
	m, ok := telemetrytest.Metric(rm, dualwriteotel.MetricAsyncWait)
	if !ok {
		t.Fatalf("no %s", dualwriteotel.MetricAsyncWait)
	}
	if m.Unit != "s" {
		t.Errorf("%s unit %q, want s", m.Name, m.Unit)
	}
	h, _ := m.Data.(metricdata.Histogram[float64])
	attrs := []attributeKV{dualwriteotel.OperationKey.String("put"), roleShadow, otelkv.OutcomeKey.String("ok")}
	var count uint64
	var sum float64
	for _, p := range h.DataPoints {
		if !telemetrytest.HasAll(p.Attributes.ToSlice(), attrs) {
			t.Errorf("%s point with attributes %v, want %v", m.Name, p.Attributes.ToSlice(), attrs)
		}
		count, sum = count+p.Count, sum+p.Sum
	}
	if count != 2 || sum != held.Seconds() {
		t.Errorf("%s: count %d, sum %v; want 2 and %v", m.Name, count, sum, held.Seconds())
	}
	if v, ok := telemetrytest.Value(rm, dualwriteotel.MetricLaneCapacity); !ok || v != 4 {
		t.Errorf("%s = %v (found %v), want 4", dualwriteotel.MetricLaneCapacity, v, ok)
	}
	if st := f.st.Dual.Stats(); st.Lanes != 1 || st.LaneCapacity != 4 {
		t.Errorf("Stats: Lanes %d, LaneCapacity %d; want 1 and 4", st.Lanes, st.LaneCapacity)
	}
}
