package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// The floor is what the proxy's hop is compared with: a bare net/http
// round trip over loopback to another process, which answers a fixed
// value GET and a fixed envelope to a PUT, with the benchmarks' payload and
// nothing else (no routing, no token check, no store). The proxy adds one
// such hop to a direct call, plus its own work; BenchmarkProxyLatency
// measures the floor beside both, in the same loop.

// benchValue is the value every benchmark key holds.
const benchValue = `{"word":"apple","guesses":3}`

var floorEnvelope = []byte(`{"success":true,"errors":[],"messages":[],"result":null}`)

// serveFloor is the floor's process (see serveChild).
func serveFloor() ([]string, func(), error) {
	value := []byte(benchValue)
	url, stop, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := value
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		if r.Method == http.MethodGet {
			h.Set("Content-Type", "application/octet-stream")
		} else {
			body = floorEnvelope
			h.Set("Content-Type", "application/json")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	return []string{url}, stop, err
}

// floor is the parent's side: the child process and a client of its own.
type floor struct {
	url    string
	client *http.Client
}

func startFloor(b *testing.B) *floor {
	b.Helper()
	url := startChild(b, "floor")[0]
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	b.Cleanup(tr.CloseIdleConnections)
	return &floor{url: url + "/client/v4/accounts/" + account + "/storage/kv/namespaces/" + namespace + "/values/",
		client: &http.Client{Transport: tr}}
}

// do makes the round trip op makes, with its payload: a GET answered with
// the value, or a PUT of the value answered with the envelope.
func (f *floor) do(ctx context.Context, op string, i int) error {
	method, body := http.MethodGet, io.Reader(nil)
	if op == "Put" {
		method, body = http.MethodPut, strings.NewReader(benchValue)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.url+benchKey(i), body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+primaryToken)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("the floor answered %s", resp.Status)
	}
	return err
}
