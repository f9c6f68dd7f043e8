package kvapi_test

import (
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kvapi"
)

// TestFaultLatency: with latency on, a request is answered only once the
// server's clock has moved by it.
func TestFaultLatency(t *testing.T) {
	a := newAPI(t, nil)
	a.server.Faults().SetLatency(250 * time.Millisecond)
	done := make(chan response)
	go func() { done <- a.do("GET", nsPath("keys"), nil) }()
	for a.clk.Timers() == 0 {
		runtime.Gosched() // until the request waits out its latency
	}
	select {
	case r := <-done:
		t.Fatalf("answered before the latency passed: %d", r.status)
	default:
	}
	a.clk.Advance(249 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("answered before the latency passed: %d", r.status)
	default:
	}
	a.clk.Advance(time.Millisecond)
	wantOK(t, "delayed request", <-done)

	a.server.Faults().SetLatency(0)
	wantOK(t, "latency off", a.do("GET", nsPath("keys"), nil))
}

// TestFaultWriteRate: one write per second per key.
func TestFaultWriteRate(t *testing.T) {
	a := newAPI(t, nil)
	f := a.server.Faults()
	f.SetWriteRateLimit(true)
	wantOK(t, "first write", a.do("PUT", nsPath("values/hot"), []byte("1")))
	a.clk.Advance(400 * time.Millisecond)
	r := a.do("PUT", nsPath("values/hot"), []byte("2"))
	wantError(t, "second write within a second", r, http.StatusTooManyRequests, kvapi.CodeTooManyWrites)
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
	}
	wantError(t, "a delete is a write", a.do("DELETE", nsPath("values/hot"), nil), http.StatusTooManyRequests, kvapi.CodeTooManyWrites)
	wantOK(t, "another key", a.do("PUT", nsPath("values/cold"), []byte("1")))
	wantOK(t, "reads are not limited", a.do("GET", nsPath("values/hot"), nil))
	a.clk.Advance(600 * time.Millisecond)
	wantOK(t, "a second later", a.do("PUT", nsPath("values/hot"), []byte("3")))

	// In a bulk write the refused keys are listed, the others written.
	r = a.do("PUT", nsPath("bulk"), jsonBody(t, []map[string]any{{"key": "hot", "value": "4"}, {"key": "new", "value": "n"}}))
	wantOK(t, "bulk write", r)
	res := decodeResult[bulkResult](t, r)
	if res.SuccessfulKeyCount != 1 || len(res.UnsuccessfulKeys) != 1 || res.UnsuccessfulKeys[0] != "hot" {
		t.Fatalf("bulk result %s; want hot unsuccessful", r.env.Result)
	}
	if v, _ := a.mem.Get(t.Context(), "hot"); string(v) != "3" {
		t.Fatalf("hot = %q; a refused key must not be written", v)
	}
	r = a.do("POST", nsPath("bulk/delete"), jsonBody(t, []string{"new", "never-written"}))
	if res := decodeResult[bulkResult](t, r); res.SuccessfulKeyCount != 1 || len(res.UnsuccessfulKeys) != 1 || res.UnsuccessfulKeys[0] != "new" {
		t.Fatalf("bulk delete result %s; want new unsuccessful", r.env.Result)
	}

	f.SetWriteRateLimit(false)
	wantOK(t, "limit off", a.do("PUT", nsPath("values/hot"), []byte("5")))
}

// TestFaultInjected: the next N requests fail, or a steady share of them.
func TestFaultInjected(t *testing.T) {
	a := newAPI(t, nil)
	f := a.server.Faults()
	f.FailNext(2, kvapi.Failure{Status: http.StatusBadGateway, RetryAfter: 3 * time.Second})
	for i := range 2 {
		r := a.do("GET", nsPath("values/k"), nil)
		wantError(t, "injected", r, http.StatusBadGateway, kvapi.CodeUnavailable)
		if r.header.Get("Retry-After") != "3" {
			t.Fatalf("failure %d: Retry-After %q", i, r.header.Get("Retry-After"))
		}
	}
	wantError(t, "after the failures", a.do("GET", nsPath("values/k"), nil), http.StatusNotFound, kvapi.CodeKeyNotFound)

	f.FailNext(1, kvapi.Failure{Status: 418})
	wantError(t, "a status that is not 5xx", a.do("GET", nsPath("keys"), nil), http.StatusServiceUnavailable, kvapi.CodeUnavailable)
	f.FailNext(1, kvapi.Failure{Status: http.StatusOK})
	wantError(t, "success:false with 200", a.do("GET", nsPath("keys"), nil), http.StatusOK, kvapi.CodeUnavailable)

	f.SetFailureRate(0.25, kvapi.Failure{})
	var failed []int
	for i := range 12 {
		if r := a.do("GET", nsPath("keys"), nil); r.status == http.StatusServiceUnavailable {
			failed = append(failed, i)
		}
	}
	if len(failed) != 3 || failed[0] != 3 || failed[1] != 7 || failed[2] != 11 {
		t.Fatalf("at rate 0.25 requests %v failed, want every fourth", failed)
	}
	f.Reset()
	for range 4 {
		wantOK(t, "after Reset", a.do("GET", nsPath("keys"), nil))
	}
}

// TestFaultConsistency: a location caches what it read, a miss included,
// for the window; the central store sees every write at once.
func TestFaultConsistency(t *testing.T) {
	a := newAPI(t, nil)
	a.server.Faults().SetConsistencyWindow(60 * time.Second)
	edge := func(method, key string, body []byte) response {
		return a.do(method, nsPath("values/"+key), body, kvapi.LocationHeader, "edge-1")
	}

	wantError(t, "edge miss", edge("GET", "k", nil), http.StatusNotFound, kvapi.CodeKeyNotFound)
	wantOK(t, "central write", a.do("PUT", nsPath("values/k"), []byte("v1")))
	if r := a.do("GET", nsPath("values/k"), nil); string(r.body) != "v1" {
		t.Fatalf("central read %q, want v1 at once", r.body)
	}
	a.clk.Advance(30 * time.Second)
	wantError(t, "edge inside the window: cached miss", edge("GET", "k", nil), http.StatusNotFound, kvapi.CodeKeyNotFound)
	r := a.do("POST", nsPath("bulk/get"), jsonBody(t, map[string]any{"keys": []string{"k"}}), kvapi.LocationHeader, "edge-1")
	if string(r.env.Result) != `{"values":{"k":null}}` {
		t.Fatalf("edge bulk get inside the window %s, want the cached miss", r.env.Result)
	}
	if r := a.do("GET", nsPath("values/k"), nil, kvapi.LocationHeader, "edge-2"); string(r.body) != "v1" {
		t.Fatalf("another location that never read k got %q, want v1", r.body)
	}
	a.clk.Advance(30 * time.Second)
	if r := edge("GET", "k", nil); string(r.body) != "v1" {
		t.Fatalf("edge after the window %d %q, want v1", r.status, r.body)
	}
	wantOK(t, "central overwrite", a.do("PUT", nsPath("values/k"), []byte("v2")))
	if r := edge("GET", "k", nil); string(r.body) != "v1" {
		t.Fatalf("edge inside the new window %q, want the old v1", r.body)
	}
	wantOK(t, "central delete", a.do("DELETE", nsPath("values/k"), nil))
	if r := edge("GET", "k", nil); string(r.body) != "v1" {
		t.Fatalf("edge after a central delete %q, want the old v1", r.body)
	}
	// A location reads its own writes.
	wantOK(t, "edge write", edge("PUT", "k", []byte("mine")))
	if r := edge("GET", "k", nil); string(r.body) != "mine" {
		t.Fatalf("edge reads %q after its own write", r.body)
	}
	a.server.Faults().SetConsistencyWindow(0)
	if r := a.do("GET", nsPath("values/k"), nil, kvapi.LocationHeader, "edge-2"); string(r.body) != "mine" {
		t.Fatalf("window off: %q", r.body)
	}
}

// TestFaultsConcurrent switches faults while requests run (for -race).
func TestFaultsConcurrent(t *testing.T) {
	a := newAPI(t, nil)
	f := a.server.Faults()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				key := "k" + string(rune('a'+w))
				switch i % 3 {
				case 0:
					a.do("PUT", nsPath("values/"+key), []byte("v"), kvapi.LocationHeader, "edge")
				case 1:
					a.do("GET", nsPath("values/"+key), nil, kvapi.LocationHeader, "edge")
				default:
					a.do("GET", nsPath("keys"), nil)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			f.SetWriteRateLimit(i%2 == 0)
			f.SetConsistencyWindow(time.Duration(i%3) * time.Second)
			f.SetFailureRate(float64(i%4)/10, kvapi.Failure{})
			f.SetEmptyListPages(i%2 == 1)
			a.clk.Advance(100 * time.Millisecond)
		}
		f.Reset()
	})
	wg.Wait()
	wantOK(t, "after the storm", a.do("GET", nsPath("keys"), nil))
}
