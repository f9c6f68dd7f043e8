package telemetry

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
)

// MetricsHandler serves the Prometheus exposition of every instrument of
// the meter provider when Config.Prometheus was set, and an empty
// exposition otherwise. The names are those the OpenTelemetry Collector's
// Prometheus exporter gives the same instruments received over OTLP
// ("kvshadow.dualwrite.drops" becomes kvshadow_dualwrite_drops_total), so
// one dashboard reads either path.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics }

// newPrometheus returns a reader that a scrape collects, on a registry of
// its own so that nothing else registered in the process leaks into it.
func newPrometheus() (*otelprom.Exporter, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	return exp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), nil
}

func emptyMetrics() http.Handler {
	return promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
}
