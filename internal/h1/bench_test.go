package h1_test

import (
	"context"
	"io"
	"net/http"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/h1"
)

// BenchmarkRoundTrip sends the same small GET through this package's
// Transport and through net/http's, against one httptest server, one
// request at a time as a proxy at low load does, under a context with a
// deadline as cfkv's tries have (so h1 sets it and watches the context). Beside ns/op and
// allocs/op (the server's included, the same on both sides) it reports
// per round trip:
//   - vcsw/op: the process's voluntary context switches, each a thread
//     that went to sleep (futex or epoll wait) and was woken again;
//   - wakes/op: goroutines made runnable and then run, from
//     /sched/latencies, which the runtime samples one transition in 8:
//     the count times 8.
func BenchmarkRoundTrip(b *testing.B) {
	s := newServer(b, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"word":"apple","guesses":4}`)
	})
	sides := []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"h1", func() http.RoundTripper { return s.transport(b, h1.Config{}) }},
		{"nethttp", func() http.RoundTripper {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = 64
			b.Cleanup(t.CloseIdleConnections)
			return t
		}},
	}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			rt := side.rt()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/values/k", nil)
			buf := make([]byte, 512)
			do := func() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				_ = resp.Body.Close()
			}
			do() // a pooled connection, as in steady state
			b.ReportAllocs()
			csw, wakes := switches(b), runWakes()
			for b.Loop() {
				do()
			}
			n := float64(b.N)
			b.ReportMetric(float64(switches(b)-csw)/n, "vcsw/op")
			b.ReportMetric(float64(runWakes()-wakes)/n, "wakes/op")
		})
	}
}

func switches(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Nvcsw
}

// runWakes estimates how many times goroutines have gone from runnable
// to running since the process started.
func runWakes() uint64 {
	sample := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(sample)
	var n uint64
	for _, c := range sample[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n * 8
}
