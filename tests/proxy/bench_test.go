package proxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/service"
)

// The benchmarks put the same call side by side in one run, through the
// same client (cloudflare-go through cfkv): directly to the REST emulator,
// and through the proxy whose primary is that emulator (stage dualwrite, an
// in-memory shadow: what a caller waits for is the primary alone). The
// emulator adds 0 or 3 ms to every request, as a remote Workers KV would.

// benchRig is one emulator, one proxy over it, and a client of each.
type benchRig struct {
	direct, proxied kv.Store
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
	env := map[string]string{
		"CLOUDFLARE_ACCOUNT_ID": account, "CLOUDFLARE_KV_NAMESPACE_ID": namespace, "CLOUDFLARE_API_TOKEN": primaryToken,
		"CLOUDFLARE_BASE_URL": hs.URL + "/client/v4/", "MONGODB_URI": "mongodb://127.0.0.1:1/unused",
		"KVSHADOW_TOKEN": clientToken, "KVSHADOW_ADMIN_TOKEN": adminToken,
	}
	memShadow := func(ctx context.Context, c *service.Config, p service.Plumbing) (*service.Backends, error) {
		primary, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: hs.URL + "/client/v4/"})
		if err != nil {
			return nil, err
		}
		return &service.Backends{Board: control.NewMemoryBoard(),
			Sides: []service.Sides{{ID: namespace, Primary: primary, Shadow: memory.New(memory.Config{}), ShadowSystem: "memory"}}}, nil
	}
	in := startInProcess(b, env, []string{"--stage", "dualwrite", "--max-concurrent", "1024"}, service.WithBackends(memShadow))
	direct, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: hs.URL + "/client/v4/", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{direct: direct, proxied: in.client(b, nil)}
	for i := range benchKeys {
		if err := direct.Put(b.Context(), benchKey(i), []byte(`{"word":"apple","guesses":3}`), kv.PutOptions{}); err != nil {
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

// BenchmarkProxyLatency alternates the direct and the proxied call, so that
// both see the same machine, and reports p50 and p99 of each, the p50 ratio,
// the time the proxy adds at p50, and the allocations the proxy's side
// makes per request (all allocations of the process per proxied call, less
// those of a direct call: what the proxy's front, its dual-write store and
// its own client to the primary cost).
func BenchmarkProxyLatency(b *testing.B) {
	for _, latency := range []time.Duration{0, 3 * time.Millisecond} {
		r := newBenchRig(b, latency)
		for _, op := range benchOps {
			b.Run(fmt.Sprintf("emulator=%s/%s", latency, op.name), func(b *testing.B) {
				ctx := context.Background()
				var direct, proxied []time.Duration
				var ms runtime.MemStats
				var directAllocs, proxiedAllocs uint64
				i := 0
				for b.Loop() {
					for _, side := range []struct {
						s      kv.Store
						d      *[]time.Duration
						allocs *uint64
					}{{r.direct, &direct, &directAllocs}, {r.proxied, &proxied, &proxiedAllocs}} {
						runtime.ReadMemStats(&ms)
						before := ms.Mallocs
						start := time.Now()
						if err := op.do(ctx, side.s, i); err != nil {
							b.Fatal(err)
						}
						*side.d = append(*side.d, time.Since(start))
						runtime.ReadMemStats(&ms)
						*side.allocs += ms.Mallocs - before
					}
					i++
				}
				n := float64(len(direct))
				dp50, pp50 := quantile(direct, 0.5), quantile(proxied, 0.5)
				b.ReportMetric(float64(dp50.Microseconds()), "direct-p50-µs")
				b.ReportMetric(float64(quantile(direct, 0.99).Microseconds()), "direct-p99-µs")
				b.ReportMetric(float64(pp50.Microseconds()), "proxy-p50-µs")
				b.ReportMetric(float64(quantile(proxied, 0.99).Microseconds()), "proxy-p99-µs")
				b.ReportMetric(float64(pp50)/float64(dp50), "p50-ratio")
				b.ReportMetric(float64((pp50 - dp50).Microseconds()), "added-p50-µs")
				b.ReportMetric((float64(proxiedAllocs)-float64(directAllocs))/n, "proxy-allocs/req")
			})
		}
	}
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
