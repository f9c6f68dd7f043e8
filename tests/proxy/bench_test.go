package proxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
)

// The benchmarks put the same call side by side in one run, through the
// same client (cloudflare-go through cfkv): directly to the REST emulator,
// and through the proxy whose primary is that emulator (stage dualwrite, an
// in-memory shadow: what a caller waits for is the primary alone). The
// emulator adds 0 or 3 ms to every request, as a remote Workers KV would.

// benchRig is one emulator, one proxy over it, a client of each, and the
// floor (floor_test.go).
type benchRig struct {
	direct, proxied kv.Store
	floor           *floor
}

func newBenchRig(b *testing.B, latency time.Duration) *benchRig {
	b.Helper()
	faults := &kvapi.Faults{}
	faults.SetLatency(latency)
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{})}, AccountID: account, Token: primaryToken, Faults: faults})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(api)
	b.Cleanup(hs.Close)
	in := startOverMemoryShadow(b, hs.URL+"/client/v4/", []string{"--stage", "dualwrite", "--max-concurrent", "1024"})
	direct, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: hs.URL + "/client/v4/", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{direct: direct, proxied: in.client(b, nil), floor: startFloor(b)}
	for i := range benchKeys {
		if err := direct.Put(b.Context(), benchKey(i), []byte(benchValue), kv.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

const benchKeys = 64

func benchKey(i int) string { return fmt.Sprintf("wordle:games:%04d", i%benchKeys) }

type benchOp struct {
	name string
	do   func(ctx context.Context, s kv.Store, i int) error
}

var benchOps = []benchOp{
	{"Get", func(ctx context.Context, s kv.Store, i int) error { _, err := s.Get(ctx, benchKey(i)); return err }},
	{"Put", func(ctx context.Context, s kv.Store, i int) error {
		return s.Put(ctx, benchKey(i), []byte(`{"word":"apple","guesses":4}`), kv.PutOptions{})
	}},
}

func quantile(d []time.Duration, q float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// BenchmarkProxyLatency alternates the direct call, the proxied call and
// the floor (a bare net/http round trip to another process with the same
// payload, floor_test.go), so that all three see the same machine, and
// reports p50 and p99 of each call, the p50 ratio, the time the proxy adds
// at p50, that time in floors (added-floors: how many bare cross-process
// round trips the proxy's hop costs), and what the proxy's side makes per
// request: its allocations (all allocations of the process per proxied
// call, less those of a direct call: the proxy's front, its dual-write
// store and its own client to the primary) and the goroutines it starts
// (proxy-goroutines/req, the same difference: net/http's server starts one
// per request to watch the connection while the handler runs).
func BenchmarkProxyLatency(b *testing.B) {
	for _, latency := range []time.Duration{0, 3 * time.Millisecond} {
		r := newBenchRig(b, latency)
		for _, op := range benchOps {
			b.Run(fmt.Sprintf("emulator=%s/%s", latency, op.name), func(b *testing.B) {
				ctx := context.Background()
				sides := []*benchSide{
					{do: func(i int) error { return op.do(ctx, r.direct, i) }},
					{do: func(i int) error { return op.do(ctx, r.proxied, i) }},
					{do: func(i int) error { return r.floor.do(ctx, op.name, i) }},
				}
				direct, proxied, floor := sides[0], sides[1], sides[2]
				var ms runtime.MemStats
				created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
				i := 0
				for b.Loop() {
					for _, side := range sides {
						runtime.ReadMemStats(&ms)
						metrics.Read(created)
						mallocs, goroutines := ms.Mallocs, created[0].Value.Uint64()
						start := time.Now()
						if err := side.do(i); err != nil {
							b.Fatal(err)
						}
						side.d = append(side.d, time.Since(start))
						runtime.ReadMemStats(&ms)
						metrics.Read(created)
						side.allocs += ms.Mallocs - mallocs
						side.goroutines += created[0].Value.Uint64() - goroutines
					}
					i++
				}
				n := float64(len(direct.d))
				dp50, pp50, fp50 := quantile(direct.d, 0.5), quantile(proxied.d, 0.5), quantile(floor.d, 0.5)
				b.ReportMetric(float64(dp50.Microseconds()), "direct-p50-µs")
				b.ReportMetric(float64(quantile(direct.d, 0.99).Microseconds()), "direct-p99-µs")
				b.ReportMetric(float64(pp50.Microseconds()), "proxy-p50-µs")
				b.ReportMetric(float64(quantile(proxied.d, 0.99).Microseconds()), "proxy-p99-µs")
				b.ReportMetric(float64(fp50.Microseconds()), "floor-p50-µs")
				b.ReportMetric(float64(pp50)/float64(dp50), "p50-ratio")
				b.ReportMetric(float64((pp50 - dp50).Microseconds()), "added-p50-µs")
				b.ReportMetric(float64(pp50-dp50)/float64(fp50), "added-floors")
				b.ReportMetric((float64(proxied.allocs)-float64(direct.allocs))/n, "proxy-allocs/req")
				b.ReportMetric((float64(proxied.goroutines)-float64(direct.goroutines))/n, "proxy-goroutines/req")
			})
		}
	}
}

// benchSide is one of the calls BenchmarkProxyLatency alternates, with
// what it measured.
type benchSide struct {
	do                 func(i int) error
	d                  []time.Duration
	allocs, goroutines uint64
}

// BenchmarkProxySaturation drives each side with as many concurrent
// callers as GOMAXPROCS times 8 and reports requests per second.
func BenchmarkProxySaturation(b *testing.B) {
	for _, latency := range []time.Duration{0, 3 * time.Millisecond} {
		r := newBenchRig(b, latency)
		for _, op := range benchOps {
			for _, side := range []struct {
				name string
				s    kv.Store
			}{{"direct", r.direct}, {"proxy", r.proxied}} {
				b.Run(fmt.Sprintf("emulator=%s/%s/%s", latency, op.name, side.name), func(b *testing.B) {
					b.SetParallelism(8)
					start := time.Now()
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							if err := op.do(context.Background(), side.s, i); err != nil {
								b.Error(err)
								return
							}
							i++
						}
					})
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				})
			}
		}
	}
}
