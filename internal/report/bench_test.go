package report_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// floorPer1000 is the fewest Workers KV requests a full comparison can make
// per 1,000 keys: one list page and ten 100-key bulk gets.
const floorPer1000 = 11

// seedBench puts n keys, spread over four modules, into every store given,
// with the same values and expiries.
func seedBench(b *testing.B, n int, stores ...kv.BulkPutter) {
	b.Helper()
	mods := []string{"loldle-emoji", "trading", "wordle", "xo"}
	entries := make([]kv.Entry, 0, n)
	for i := range n {
		e := kv.Entry{Key: fmt.Sprintf("%s:user:%07d", mods[i%len(mods)], i), Value: fmt.Appendf(nil, `{"id":%d,"score":%d}`, i, i*7%1000)}
		entries = append(entries, e)
	}
	for _, s := range stores {
		for lo := 0; lo < n; lo += 5000 {
			if err := s.PutMany(context.Background(), entries[lo:min(lo+5000, n)]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchScan runs full scans of n keys and reports keys compared per second
// and each side's requests per 1,000 keys next to the floor.
func benchScan(b *testing.B, n int, cfg report.Config, primaryRequests, shadowRequests func() int64) {
	cfg.Primary.Budget = report.Budget{Requests: -1}
	b.ReportAllocs()
	b.ResetTimer()
	p0, s0 := primaryRequests(), shadowRequests()
	for b.Loop() {
		r, err := report.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if r.Totals.Compared != int64(n) || r.Totals.Divergent != 0 {
			b.Fatalf("compared %d, divergent %d", r.Totals.Compared, r.Totals.Divergent)
		}
	}
	keys := float64(n) * float64(b.N)
	p, s := float64(primaryRequests()-p0), float64(shadowRequests()-s0)
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(p/keys*1000, "primary-req/1k-keys")
	b.ReportMetric(s/keys*1000, "shadow-req/1k-keys")
	b.ReportMetric(floorPer1000, "floor-req/1k-keys")
}

func BenchmarkScanMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			clk := clock.NewFake(epoch)
			p, s := newCounted(clk), newCounted(clk)
			seedBench(b, n, p.Store, s.Store)
			cfg := report.Config{Primary: report.Side{Store: p}, Shadow: report.Side{Store: s}, Clock: clk}
			benchScan(b, n, cfg, p.requests, s.requests)
		})
	}
}

// BenchmarkScanWorkersKV scans through the real Workers KV client against
// the REST API server on loopback HTTP, counting the HTTP requests the
// server receives: what Cloudflare would bill and rate-limit.
func BenchmarkScanWorkersKV(b *testing.B) {
	const n = 10_000
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Config{Clock: clk})
	srv, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{"ns": mem}, AccountID: "acct", Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	var httpRequests atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpRequests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	b.Cleanup(hs.Close)
	primary, err := cfkv.New(cfkv.Config{
		AccountID: "acct", NamespaceID: "ns", APIToken: "t", BaseURL: hs.URL + "/client/v4/",
		HTTPClient: hs.Client(), Clock: clk, MaxRetries: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	shadow := newCounted(clk)
	seedBench(b, n, mem, shadow.Store)
	cfg := report.Config{Primary: report.Side{Store: primary, Name: "cloudflare_kv"}, Shadow: report.Side{Store: shadow}, Clock: clk}
	benchScan(b, n, cfg, httpRequests.Load, shadow.requests)
}
