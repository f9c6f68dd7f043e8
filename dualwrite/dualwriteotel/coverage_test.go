package dualwriteotel_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// emitted drives three composites through every event the instrumentation
// records (writes, a shadow outage that opens the breaker, comparisons that
// diverge, a repair) and returns every metric and every span and event
// attribute key they produced.
func emitted(t *testing.T) (metrics map[string]metricdata.Metrics, attrKeys map[string]bool, spanNames map[string]bool) {
	metrics, attrKeys, spanNames = map[string]metricdata.Metrics{}, map[string]bool{}, map[string]bool{}
	ctx := context.Background()
	harvest := func(f *fixture) {
		for _, sm := range f.rec.Collect(t).ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = m
				for _, set := range attrSets(m) {
					for _, kv := range set {
						attrKeys[string(kv.Key)] = true
					}
				}
			}
		}
		for _, s := range f.rec.Ended() {
			spanNames[s.Name()] = true
			for _, kv := range s.Attributes() {
				attrKeys[string(kv.Key)] = true
			}
			for _, e := range s.Events() {
				spanNames[e.Name] = true
				for _, kv := range e.Attributes {
					attrKeys[string(kv.Key)] = true
				}
			}
		}
	}

	faulty, err := kvfault.New(nil2mem(), kvfault.Config{Outage: true})
	if err != nil {
		t.Fatal(err)
	}
	broken := newFixture(t, faulty, dualwrite.Config{Stage: dualwrite.DualWrite, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 1}})
	if err := broken.st.KV.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	broken.flush(t)
	cctx, bot := broken.caller("bot")
	_ = broken.st.KV.Put(cctx, "wordle:b", []byte("v"), kv.PutOptions{})
	bot.End()
	harvest(broken) // the gauges, while the store is open
	if err := broken.st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	harvest(broken) // the breaker's transitions, delivered by Close

	compared := newFixture(t, nil, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, Journal: &flakyJournal{}})
	if err := compared.primary.Put(ctx, "wordle:c", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _ = compared.st.KV.Get(ctx, "wordle:c")
	if _, err := compared.st.KV.List(ctx, kv.ListOptions{Prefix: "wordle:"}); err != nil {
		t.Fatal(err)
	}
	compared.flush(t)
	if _, err := compared.st.Dual.Settle(ctx); err != nil { // confirms the suspicion
		t.Fatal(err)
	}
	harvest(compared)

	faulty2, err := kvfault.New(nil2mem(), kvfault.Config{Outage: true})
	if err != nil {
		t.Fatal(err)
	}
	repaired := newFixture(t, faulty2, dualwrite.Config{Stage: dualwrite.DualWrite, Breaker: dualwrite.BreakerConfig{FailuresToOpen: 100}})
	_ = repaired.st.KV.Put(ctx, "wordle:d", []byte("v"), kv.PutOptions{})
	repaired.flush(t)
	faulty2.SetOutage(false)
	repaired.st.Dual.RepairDirty()
	repaired.flush(t)
	harvest(repaired)
	return metrics, attrKeys, spanNames
}

func attrSets(m metricdata.Metrics) [][]attributeKV {
	var out [][]attributeKV
	add := func(s interface{ ToSlice() []attributeKV }) { out = append(out, s.ToSlice()) }
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			add(&p.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			add(&p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			add(&p.Attributes)
		}
	}
	return out
}

// promName is the name Prometheus shows after the collector's standard
// translation: dots to underscores, the unit's suffix (units in braces have
// none), "_total" for monotonic sums.
func promName(m metricdata.Metrics) string {
	name := strings.ReplaceAll(m.Name, ".", "_")
	if unit := map[string]string{"s": "_seconds", "By": "_bytes"}[m.Unit]; !strings.HasSuffix(name, unit) {
		name += unit // a unit the name already ends with is not repeated
	}
	if s, ok := m.Data.(metricdata.Sum[int64]); ok && s.IsMonotonic {
		name += "_total"
	}
	return name
}

func TestDashboardAndDocsCoverEveryMetric(t *testing.T) {
	metrics, attrKeys, spanNames := emitted(t)
	if len(metrics) < 19 {
		t.Fatalf("only %d metrics emitted: the scenario missed some", len(metrics))
	}
	docs, err := os.ReadFile("../../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../deploy/grafana/kvshadow-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string  `json:"title"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}

	// Every metric is documented under both names and charted.
	known := map[string]bool{}
	for key := range attrKeys {
		known[strings.ReplaceAll(key, ".", "_")] = true // a label
	}
	var exprs strings.Builder
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs.WriteString(tg.Expr + "\n")
		}
	}
	for name, m := range metrics {
		if !strings.HasPrefix(name, "kvshadow.") {
			t.Errorf("metric %s is outside the kvshadow. prefix", name)
		}
		prom := promName(m)
		for _, want := range []string{"`" + name + "`", "`" + prom + "`", "`" + m.Unit + "`"} {
			if !strings.Contains(string(docs), want) {
				t.Errorf("docs/telemetry.md does not mention %s (metric %s)", want, name)
			}
		}
		if m.Description == "" {
			t.Errorf("metric %s has no description", name)
		}
		known[prom] = true
		if _, ok := m.Data.(metricdata.Histogram[float64]); ok {
			for _, sfx := range []string{"_bucket", "_sum", "_count"} {
				known[prom+sfx] = true
			}
		}
		if !regexp.MustCompile(`\b` + prom + `(_bucket|_sum|_count)?\b`).MatchString(exprs.String()) {
			t.Errorf("the dashboard charts no %s", prom)
		}
	}
	// The dashboard names nothing that does not exist. The instance's own
	// metrics (service, its memory budget, its MongoDB connections) are
	// checked against a scrape of the running
	// service, by service's TestMetricsServeTheDashboardSeries.
	for _, id := range regexp.MustCompile(`\bkvshadow_[a-z_]+`).FindAllString(exprs.String(), -1) {
		if !known[id] && !slices.ContainsFunc([]string{"kvshadow_service_", "kvshadow_control_", "kvshadow_memory_", "kvshadow_mongodb_"},
			func(p string) bool { return strings.HasPrefix(id, p) }) {
			t.Errorf("the dashboard queries %s, which is neither a metric nor a label", id)
		}
	}
	// Every attribute and span name is documented.
	for key := range attrKeys {
		if !strings.Contains(string(docs), "`"+key+"`") {
			t.Errorf("docs/telemetry.md does not describe attribute %s", key)
		}
	}
	for name := range spanNames {
		if strings.Contains(name, " ") || name == "bot" {
			continue // "{operation} {namespace}": the pattern is documented
		}
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/telemetry.md does not describe span or event %s", name)
		}
	}
	if !slices.ContainsFunc(dash.Panels, func(p panel) bool { return p.Title == "Stage" }) {
		t.Error("the dashboard has no Stage panel")
	}
}

type panel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type attributeKV = attribute.KeyValue
