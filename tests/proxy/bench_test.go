package proxy_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// The benchmarks put the same call side by side in one run, through the
// same client (cloudflare-go through cfkv): directly to the emulated
// Workers KV, and through the proxy whose primary is that emulator (stage
// dualwrite, an in-memory shadow: what a caller waits for is the primary
// alone). The emulator, the proxy, the floor and the two forwarders each
// run in a process of their own (children_test.go), as in a deployment, so
// that the proxy's hop costs what it costs there: a loopback round trip to
// another process and back, whose threads sleep while they wait. The
// emulator adds 0, 3 or 20 ms to every request, as a remote Workers KV
// would: 3 ms is a primary near the proxy, 20 ms Workers KV from outside
// Cloudflare (which answers in 20-50 ms).

// benchRig is one emulator, the proxy and the two forwarders over it, a
// client of each, and the floor.
type benchRig struct {
	direct, proxied kv.Store
	forwarded       kv.Store // through the forwarder (forwarder_test.go)
	sdkForwarded    kv.Store // through the SDK forwarder (forwarder_test.go)
	floor           *floor
	probe           string // the proxy's counters (see withProbe)
	forwarderProbe  string // the forwarder's
	sdkProbe        string // the SDK forwarder's
}

func newBenchRig(b *testing.B, latency time.Duration) *benchRig {
	b.Helper()
	primary := startChild(b, "emulator", latencyEnv+"="+latency.String())[0]
	proxyEnv := []string{primaryEnv + "=" + primary}
	for _, env := range []string{profileEnv, allocsEnv} { // profiles per rig
		if path := os.Getenv(env); path != "" {
			proxyEnv = append(proxyEnv, env+"="+path+"."+latency.String())
		}
	}
	proxy := startChild(b, "proxy", proxyEnv...)
	forwarder := startChild(b, "forwarder", primaryEnv+"="+primary)
	sdkForwarder := startChild(b, "sdkforwarder", proxyEnv...)
	direct, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: primary, MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: clientToken, BaseURL: proxy[0], MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	forwarded, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: forwarder[0], MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	sdkForwarded, err := cfkv.New(cfkv.Config{AccountID: account, NamespaceID: namespace, APIToken: primaryToken, BaseURL: sdkForwarder[0], MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{direct: direct, proxied: proxied, forwarded: forwarded, sdkForwarded: sdkForwarded, floor: startFloor(b),
		probe: proxy[1], forwarderProbe: forwarder[1], sdkProbe: sdkForwarder[1]}
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
// per request to watch the connection while the handler runs), and the CPU
// time the proxy's and the forwarder's processes used per call, from their
// rusage (proxy-cpu-µs/req, forwarder-cpu-µs/req, cpu-ratio: the proxy's
// over the forwarder's; the goal is at most 2). over-forwarder-pct is the
// proxy's p50 above the forwarder's as a share of the direct call's p50
// (the goal: at most 2 % at 3 and 20 ms). A fifth side, the SDK forwarder
// (forwarder_test.go: the forwarder's hop made through cfkv, the proxy's own
// client to its primary), splits that share in two: sdk-over-forwarder-pct,
// what the SDK alone costs a hop, and proxy-over-sdk-pct, what the proxy
// does beyond it (the front, the dual-write store, the copy), and
// proxy-over-sdk-allocs/req the allocations it makes beyond it: both
// processes count every goroutine of theirs (net/http's server, cfkv's
// client to the primary, and for the proxy the front, the store, the copy
// to its memory shadow and its background work), neither the client's
// nor the emulator's.
func BenchmarkProxyLatency(b *testing.B) {
	forEachRig(b, func(b *testing.B, r *benchRig) {
		for _, op := range benchOps {
			b.Run(op.name, func(b *testing.B) {
				ctx := context.Background()
				sides := []*benchSide{
					{do: func(i int) error { return op.do(ctx, r.direct, i) }},
					{do: func(i int) error { return op.do(ctx, r.proxied, i) }},
					{do: func(i int) error { return r.floor.do(ctx, op.name, i) }},
					{do: func(i int) error { return op.do(ctx, r.forwarded, i) }},
					{do: func(i int) error { return op.do(ctx, r.sdkForwarded, i) }},
				}
				direct, proxied, floor, fwd, sdk := sides[0], sides[1], sides[2], sides[3], sides[4]
				before, fBefore, sBefore := probe(b, r.probe), probe(b, r.forwarderProbe), probe(b, r.sdkProbe)
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
				after, fAfter, sAfter := probe(b, r.probe), probe(b, r.forwarderProbe), probe(b, r.sdkProbe)
				n := float64(len(proxied.d))
				dp50, pp50, fp50, wp50, sp50 := quantile(direct.d, 0.5), quantile(proxied.d, 0.5), quantile(floor.d, 0.5), quantile(fwd.d, 0.5), quantile(sdk.d, 0.5)
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
				b.ReportMetric(100*float64(pp50-wp50)/float64(dp50), "over-forwarder-pct")
				b.ReportMetric(float64(sp50.Microseconds()), "sdk-p50-µs")
				b.ReportMetric(100*float64(sp50-wp50)/float64(dp50), "sdk-over-forwarder-pct")
				b.ReportMetric(100*float64(pp50-sp50)/float64(dp50), "proxy-over-sdk-pct")
				pcpu, fcpu := float64(after.cpuMicros-before.cpuMicros)/n, float64(fAfter.cpuMicros-fBefore.cpuMicros)/n
				b.ReportMetric(pcpu, "proxy-cpu-µs/req")
				b.ReportMetric(fcpu, "forwarder-cpu-µs/req")
				b.ReportMetric(pcpu/fcpu, "cpu-ratio")
				b.ReportMetric(float64(sAfter.cpuMicros-sBefore.cpuMicros)/n, "sdk-cpu-µs/req")
				b.ReportMetric(float64(after.allocs-before.allocs)/n, "proxy-allocs/req")
				b.ReportMetric(float64(sAfter.allocs-sBefore.allocs)/n, "sdk-allocs/req")
				b.ReportMetric(float64(int64(after.allocs-before.allocs)-int64(sAfter.allocs-sBefore.allocs))/n, "proxy-over-sdk-allocs/req")
				b.ReportMetric(float64(after.goroutines-before.goroutines)/n, "proxy-goroutines/req")
			})
		}
	})
}

// benchSide is one of the calls BenchmarkProxyLatency alternates, with
// what it measured.
type benchSide struct {
	do func(i int) error
	d  []time.Duration
}

// benchLatencies are the emulator's added latencies the benchmarks run at.
var benchLatencies = []time.Duration{0, 3 * time.Millisecond, 20 * time.Millisecond}

// forEachRig runs bench under emulator=<latency> for each of
// benchLatencies, with a rig started only for a latency -test.bench selects.
func forEachRig(b *testing.B, bench func(b *testing.B, r *benchRig)) {
	for _, latency := range benchLatencies {
		b.Run("emulator="+latency.String(), func(b *testing.B) { bench(b, newBenchRig(b, latency)) })
	}
}

// BenchmarkProxySaturation drives the direct calls, the proxy, the
// forwarder and the SDK forwarder in turn, each with GOMAXPROCS times 8
// concurrent callers for b.N calls, twice over in mirrored order (so that
// no side always runs first), and reports each side's requests a second,
// the proxy's over the forwarder's (proxy-ratio; the goal is at least 0.9),
// the SDK forwarder's over the forwarder's (sdk-ratio: the most any hop
// through cloudflare-go reaches) and the proxy's over the SDK forwarder's
// (proxy-sdk-ratio). The client, the emulator and both hops share the
// machine's cores, so a ratio is what to read, not a rate.
func BenchmarkProxySaturation(b *testing.B) {
	forEachRig(b, func(b *testing.B, r *benchRig) {
		for _, op := range benchOps {
			b.Run(op.name, func(b *testing.B) {
				sides := map[string]kv.Store{"direct": r.direct, "proxy": r.proxied, "forwarder": r.forwarded, "sdk": r.sdkForwarded}
				spent := map[string]time.Duration{}
				callers := 8 * runtime.GOMAXPROCS(0)
				b.ResetTimer()
				for _, name := range []string{"direct", "proxy", "forwarder", "sdk", "sdk", "forwarder", "proxy", "direct"} {
					spent[name] += saturate(b, sides[name], op, b.N, callers)
				}
				calls := float64(2 * b.N)
				for _, name := range []string{"direct", "proxy", "forwarder", "sdk"} {
					b.ReportMetric(calls/spent[name].Seconds(), name+"-req/s")
				}
				b.ReportMetric(spent["forwarder"].Seconds()/spent["proxy"].Seconds(), "proxy-ratio")
				b.ReportMetric(spent["forwarder"].Seconds()/spent["sdk"].Seconds(), "sdk-ratio")
				b.ReportMetric(spent["sdk"].Seconds()/spent["proxy"].Seconds(), "proxy-sdk-ratio")
			})
		}
	})
}

// saturate makes n calls of op on s from callers goroutines at once and
// returns how long they took.
func saturate(b *testing.B, s kv.Store, op benchOp, n, callers int) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if err := op.do(context.Background(), s, int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
