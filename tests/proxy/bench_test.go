package proxy_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// The benchmarks put the same call side by side in one run, through the
// same client (cloudflare-go through cfkv): directly to the emulated
// Workers KV, and through the proxy whose primary is that emulator (stage
// dualwrite, an in-memory shadow: what a caller waits for is the primary
// alone). The emulator, the proxy, the floor and the forwarder each run in
// a process of their own (children_test.go), as in a deployment, so that the proxy's hop
// costs what it costs there: a loopback round trip to another process and
// back, whose threads sleep while they wait. The emulator adds 0 or 3 ms to
// every request, as a remote Workers KV would.

// benchRig is one emulator, one proxy over it, a client of each, and the
// floor.
type benchRig struct {
	direct, proxied kv.Store
	forwarded       kv.Store // through the forwarder (forwarder_test.go)
	floor           *floor
	probe           string // the proxy's counters (see serveProxy)
}

func newBenchRig(b *testing.B, latency time.Duration) *benchRig {
	b.Helper()
	primary := startChild(b, "emulator", latencyEnv+"="+latency.String())[0]
	proxy := startChild(b, "proxy", primaryEnv+"="+primary)
	forwarder := startChild(b, "forwarder", primaryEnv+"="+primary)[0]
	direct, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: primary, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: clientToken, BaseURL: proxy[0], MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	forwarded, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: forwarder, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{direct: direct, proxied: proxied, forwarded: forwarded, floor: startFloor(b), probe: proxy[1]}
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

// BenchmarkProxyLatency alternates the direct call, the proxied call, the
// floor (a bare net/http round trip to another process with the same
// payload, floor_test.go) and the same call through the forwarder (a bare
// net/http forwarding process, forwarder_test.go), so that all four see the
// same machine, and reports p50 and p99 of each call, the p50 ratio, the
// time the proxy adds at p50, that time in floors (added-floors: how many
// bare cross-process round trips the proxy's hop costs; its own hop is one
// of them), the floor-ratio (the p50 ratio of a hop that costs one floor and
// does nothing: the direct call plus the floor, over the direct call), the
// forwarder's p50 and its ratio to the direct call (forwarder-ratio: what a
// hop that forwards and does nothing else costs, its threads woken for the
// request and again for the primary's answer), the proxy's p50 above the
// forwarder's (over-forwarder-p50-µs: the proxy's own work), and what the
// proxy's process makes per proxied call, read from its probe before and
// after the loop: its allocations (proxy-allocs/req: the front, the
// dual-write store, the copy to the shadow and the proxy's own client to the
// primary, and whatever the process did in the background meanwhile) and the
// goroutines it starts (proxy-goroutines/req: net/http's server starts one
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
					{do: func(i int) error { return op.do(ctx, r.forwarded, i) }},
				}
				direct, proxied, floor, fwd := sides[0], sides[1], sides[2], sides[3]
				before := probe(b, r.probe)
				i := 0
				for b.Loop() {
					for _, side := range sides {
						start := time.Now()
						if err := side.do(i); err != nil {
							b.Fatal(err)
						}
						side.d = append(side.d, time.Since(start))
					}
					i++
				}
				after := probe(b, r.probe)
				n := float64(len(proxied.d))
				dp50, pp50, fp50, wp50 := quantile(direct.d, 0.5), quantile(proxied.d, 0.5), quantile(floor.d, 0.5), quantile(fwd.d, 0.5)
				b.ReportMetric(float64(dp50.Microseconds()), "direct-p50-µs")
				b.ReportMetric(float64(quantile(direct.d, 0.99).Microseconds()), "direct-p99-µs")
				b.ReportMetric(float64(pp50.Microseconds()), "proxy-p50-µs")
				b.ReportMetric(float64(quantile(proxied.d, 0.99).Microseconds()), "proxy-p99-µs")
				b.ReportMetric(float64(fp50.Microseconds()), "floor-p50-µs")
				b.ReportMetric(float64(pp50)/float64(dp50), "p50-ratio")
				b.ReportMetric(float64(dp50+fp50)/float64(dp50), "floor-ratio")
				b.ReportMetric(float64((pp50 - dp50).Microseconds()), "added-p50-µs")
				b.ReportMetric(float64(pp50-dp50)/float64(fp50), "added-floors")
				b.ReportMetric(float64(wp50.Microseconds()), "forwarder-p50-µs")
				b.ReportMetric(float64(wp50)/float64(dp50), "forwarder-ratio")
				b.ReportMetric(float64((pp50 - wp50).Microseconds()), "over-forwarder-p50-µs")
				b.ReportMetric(float64(after.allocs-before.allocs)/n, "proxy-allocs/req")
				b.ReportMetric(float64(after.goroutines-before.goroutines)/n, "proxy-goroutines/req")
			})
		}
	}
}

// benchSide is one of the calls BenchmarkProxyLatency alternates, with
// what it measured.
type benchSide struct {
	do func(i int) error
	d  []time.Duration
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
