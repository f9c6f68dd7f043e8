package cfkv_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v6/kv"
	"github.com/cloudflare/cloudflare-go/v6/option"
	"github.com/cloudflare/cloudflare-go/v6/shared"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// BenchmarkSpacedCall is what cloudflare-go costs a call, beside the least
// a client can do: the same value's GET or PUT made in one loop, calls
// spaced as a proxy's calls to a primary 3 ms away are (0 ms: back to
// back), by three clients over the same transport (cfkv.NewTransport) to
// the same kvapi server in this process:
//
//   - nethttp: one net/http request, built by hand as the API takes it;
//   - sdk: cloudflare-go as its documentation shows it (Values.Get, whose
//     answer is read raw, and Values.Update with its typed parameters and
//     the value as its form field; the SDK's retries off);
//   - cfkv: the Store, cloudflare-go as cfkv uses it (backends/cfkv/doc.go).
//
// Each side reports its p50 and the CPU time the process spent per call
// (rusage: the server's share is the same for every side, so differences
// between sides are the clients'), and the sdk's and cfkv's p50 above
// nethttp's. At 3 ms this is the floor under BenchmarkProxyLatency's
// sdk-over-forwarder-pct (tests/proxy): what any hop that reaches Workers
// KV through cloudflare-go pays before it does anything of its own.
func BenchmarkSpacedCall(b *testing.B) {
	for _, gap := range []time.Duration{0, 3 * time.Millisecond} {
		for _, op := range []string{"Get", "Put"} {
			b.Run("gap="+gap.String()+"/"+op, func(b *testing.B) {
				sides := spacedSides(b, op)
				lat := make([][]time.Duration, len(sides))
				cpu := make([]time.Duration, len(sides))
				n := 0
				for b.Loop() {
					for i, s := range sides {
						time.Sleep(gap)
						c0, t0 := processCPU(), time.Now()
						s.call(b.Context())
						lat[i] = append(lat[i], time.Since(t0))
						cpu[i] += processCPU() - c0
					}
					n++
				}
				p50 := make([]float64, len(sides))
				for i, s := range sides {
					slices.Sort(lat[i])
					p50[i] = micros(lat[i][len(lat[i])/2])
					b.ReportMetric(p50[i], s.name+"-p50-µs")
					b.ReportMetric(micros(cpu[i])/float64(n), s.name+"-cpu-µs/call")
				}
				b.ReportMetric(p50[1]-p50[0], "sdk-over-nethttp-µs")
				b.ReportMetric(p50[2]-p50[0], "cfkv-over-nethttp-µs")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// spacedSide is one client's call of the operation.
type spacedSide struct {
	name string
	call func(ctx context.Context)
}

// spacedSides are the nethttp, sdk and cfkv clients of op (Get or Put) on
// one key of a fresh rig, in that order.
func spacedSides(b testing.TB, op string) []spacedSide {
	client := &http.Client{Transport: cfkv.NewTransport()}
	r := newRig(b, nil, func(c *cfkv.Config) { c.HTTPClient = client })
	const key = "wordle:games:000042"
	value := []byte(`{"word":"apple","guesses":["crane"]}`)
	if err := r.store.Put(b.Context(), key, value, kv.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	sdk := cf.NewNamespaceService(option.WithBaseURL(r.url+"/client/v4/"), option.WithAPIToken(testToken),
		option.WithHTTPClient(client), option.WithMaxRetries(0))
	url := r.url + "/client/v4/accounts/" + testAccount + "/storage/kv/namespaces/" + testNamespace + "/values/" + key
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	drain := func(resp *http.Response, err error) {
		must(err)
		_, err = io.Copy(io.Discard, resp.Body)
		must(err)
		must(resp.Body.Close())
	}
	if op == "Get" {
		return []spacedSide{
			{"nethttp", func(ctx context.Context) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				must(err)
				req.Header.Set("Authorization", "Bearer "+testToken)
				drain(client.Do(req))
			}},
			{"sdk", func(ctx context.Context) {
				var params cf.NamespaceValueGetParams
				params.AccountID.Value, params.AccountID.Present = testAccount, true
				drain(sdk.Values.Get(ctx, testNamespace, key, params))
			}},
			{"cfkv", func(ctx context.Context) {
				_, err := r.store.Get(ctx, key)
				must(err)
			}},
		}
	}
	return []spacedSide{
		{"nethttp", func(ctx context.Context) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(value))
			must(err)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/octet-stream")
			drain(client.Do(req))
		}},
		{"sdk", func(ctx context.Context) {
			var params cf.NamespaceValueUpdateParams
			params.AccountID.Value, params.AccountID.Present = testAccount, true
			params.Value.Value, params.Value.Present = shared.UnionString(value), true
			_, err := sdk.Values.Update(ctx, testNamespace, key, params)
			must(err)
		}},
		{"cfkv", func(ctx context.Context) {
			must(r.store.Put(ctx, key, value, kv.PutOptions{}))
		}},
	}
}

// processCPU is the CPU time this process has spent, in user and system
// mode, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// TestCfkvAllocatesWhatItsTriesNeed holds cfkv's allocations a call to
// what it adds to cloudflare-go's own (BenchmarkSpacedCall's sdk side, on
// the same server in this process): for a value's GET, the try's context
// with its timer (7) and the value read whole into one slice of its length
// (1), less the token's header that WithAPIToken makes each call (4:
// cfkv's is made once); a PUT, whose answer cfkv reads once where the SDK
// decodes it, allocates 44 less than the SDK's own.
// Nothing per call is left on the heap by a success's classification or
// the answer's type. Each side's count is the least of three rounds: the
// in-process server and the connection pool's own work (a connection made
// again on a loaded machine) only ever add to a round.
func TestCfkvAllocatesWhatItsTriesNeed(t *testing.T) {
	least := func(call func(context.Context)) float64 {
		return min(testing.AllocsPerRun(100, func() { call(t.Context()) }), testing.AllocsPerRun(100, func() { call(t.Context()) }),
			testing.AllocsPerRun(100, func() { call(t.Context()) }))
	}
	for op, over := range map[string]float64{"Get": 4, "Put": -44} {
		sides := spacedSides(t, op)
		sdk := least(sides[1].call)
		if got := least(sides[2].call); got > sdk+over {
			t.Errorf("%s: cfkv allocates %v a call, the SDK's own %v: more than %v above it", op, got, sdk, over)
		}
	}
}
