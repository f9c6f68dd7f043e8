package report_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kvshadow/kvshadow/internal/report"
)

// BenchmarkScanFerretDB scans 600 keys (kept to hundreds: FerretDB scans a
// collection for every query) in four modules, through the Workers KV client
// against the REST API server and the MongoDB driver against FerretDB, and
// reports keys compared per second and each side's requests per 1,000 keys
// next to the Workers KV floor (1 list + 10 bulk gets per 1,000 keys, or
// 11.67 per 1,000 for 600 keys, whose one list page is not full).
func BenchmarkScanFerretDB(b *testing.B) {
	r := newRig(b)
	const n = 600
	var specs []spec
	for i := range n {
		v := fmt.Sprintf(`{"id":%d}`, i)
		specs = append(specs, spec{key: fmt.Sprintf("%s:user:%05d", []string{"a", "b", "loldle-emoji", "wordle"}[i%4], i), pv: v, sv: v})
	}
	r.seed(b, specs)
	cfg := report.Config{
		Primary: report.Side{Store: r.primary, Name: "cloudflare_kv", Budget: report.Budget{Requests: -1}},
		Shadow:  report.Side{Store: r.shadow, Name: "mongodb"},
	}
	var shadowRequests int64
	before := r.kvServer.Requests()
	b.ResetTimer()
	for b.Loop() {
		rep, err := report.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Totals.Compared != n || rep.Totals.Divergent != 0 {
			b.Fatalf("totals %+v", rep.Totals)
		}
		shadowRequests += rep.Shadow.Requests.Total
	}
	keys := float64(n * b.N)
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(r.kvServer.Requests()-before)/keys*1000, "primary-req/1k-keys")
	b.ReportMetric(float64(shadowRequests)/keys*1000, "shadow-req/1k-keys")
	// The floor for n keys: a list page per 1,000 and a bulk get per 100.
	b.ReportMetric(float64((n+999)/1000+(n+99)/100)/n*1000, "floor-req/1k-keys")
}
