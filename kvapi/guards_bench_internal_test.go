package kvapi

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
)

// BenchmarkGuards prices fair admission, the connection cap, the body rate
// and the memory budget on a Get and a Put of 1 KiB through the front, over
// loopback, against the same front unguarded (a plain semaphore, nothing
// charged: the front before them), side by side in one run:
//
//	go test -run '^$' -bench BenchmarkGuards -benchmem -count 5 ./kvapi/
//
// allocs/op counts the client's allocations too, the same on both sides;
// p50-µs is the median round trip.
func BenchmarkGuards(b *testing.B) {
	for _, op := range []string{"get", "put"} {
		for _, side := range []struct {
			name      string
			unguarded bool
		}{{"guarded", false}, {"unguarded", true}} {
			b.Run(op+"/"+side.name, func(b *testing.B) { benchGuards(b, op, side.unguarded) })
		}
	}
}

func benchGuards(b *testing.B, op string, unguarded bool) {
	api, err := New(Config{Namespaces: map[string]kv.Store{"ns": memory.New(memory.Config{})}, Token: "t", unguarded: unguarded})
	if err != nil {
		b.Fatal(err)
	}
	hs, err := NewHTTPServer(api, ServeConfig{unguarded: unguarded})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	b.Cleanup(func() { _ = hs.Close() })
	url := "http://" + ln.Addr().String() + "/client/v4/accounts/a/storage/kv/namespaces/ns/values/k"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	value := bytes.Repeat([]byte("v"), 1<<10)
	send := func(method string) {
		var body io.Reader
		if method == http.MethodPut {
			body = bytes.NewReader(value)
		}
		req, _ := http.NewRequest(method, url, body)
		req.Header.Set("Authorization", "Bearer t")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", method, res.StatusCode)
		}
	}
	send(http.MethodPut)
	method := http.MethodGet
	if op == "put" {
		method = http.MethodPut
	}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		send(method)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
}
