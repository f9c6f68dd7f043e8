package telemetrytest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Recorder is a tracer provider and a meter provider that keep everything
// in memory until the test reads it.
type Recorder struct {
	Spans  *tracetest.SpanRecorder
	Reader *sdkmetric.ManualReader
	TP     *sdktrace.TracerProvider
	MP     *sdkmetric.MeterProvider
}

// New returns a Recorder that samples every span; it shuts down when the
// test ends.
func New(t testing.TB) *Recorder {
	t.Helper()
	r := &Recorder{Spans: tracetest.NewSpanRecorder(), Reader: sdkmetric.NewManualReader()}
	r.TP = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.Spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	r.MP = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.Reader))
	t.Cleanup(func() {
		_ = r.TP.Shutdown(context.Background())
		_ = r.MP.Shutdown(context.Background())
	})
	return r
}

// Ended returns the spans that have ended, in the order they ended.
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan { return r.Spans.Ended() }

// Named returns the ended spans called name.
func (r *Recorder) Named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.Spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// With returns the ended spans called name that carry every attribute of attrs.
func (r *Recorder) With(name string, attrs ...attribute.KeyValue) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.Named(name) {
		if HasAll(s.Attributes(), attrs) {
			out = append(out, s)
		}
	}
	return out
}

// Attr returns the value of key on span s.
func Attr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// HasAll reports whether have holds every attribute of want.
func HasAll(have []attribute.KeyValue, want []attribute.KeyValue) bool {
	set := attribute.NewSet(have...)
	for _, w := range want {
		v, ok := set.Value(w.Key)
		if !ok || v != w.Value {
			return false
		}
	}
	return true
}

// Collect reads the metrics now.
func (r *Recorder) Collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	return rm
}

// Metric finds the metric called name in rm.
func Metric(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// Value adds up the data points of the metric called name whose attributes
// include attrs: the sum of a counter's points, the last value of a gauge's,
// the count of a histogram's. found is false when no point matched.
func Value(rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) (total float64, found bool) {
	m, ok := Metric(rm, name)
	if !ok {
		return 0, false
	}
	match := func(s attribute.Set) bool { return HasAll(s.ToSlice(), attrs) }
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return addPoints(d.DataPoints, match)
	case metricdata.Sum[float64]:
		return addPoints(d.DataPoints, match)
	case metricdata.Gauge[int64]:
		return addPoints(d.DataPoints, match)
	case metricdata.Gauge[float64]:
		return addPoints(d.DataPoints, match)
	case metricdata.Histogram[float64]:
		return addCounts(d.DataPoints, match)
	case metricdata.Histogram[int64]:
		return addCounts(d.DataPoints, match)
	}
	return total, found
}

func addPoints[N int64 | float64](points []metricdata.DataPoint[N], match func(attribute.Set) bool) (total float64, found bool) {
	for _, p := range points {
		if match(p.Attributes) {
			total, found = total+float64(p.Value), true
		}
	}
	return total, found
}

func addCounts[N int64 | float64](points []metricdata.HistogramDataPoint[N], match func(attribute.Set) bool) (total float64, found bool) {
	for _, p := range points {
		if match(p.Attributes) {
			total, found = total+float64(p.Count), true
		}
	}
	return total, found
}

// Unit returns the unit of the metric called name.
func Unit(rm metricdata.ResourceMetrics, name string) string {
	m, _ := Metric(rm, name)
	return m.Unit
}
