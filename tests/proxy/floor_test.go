package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
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

// floorEnv makes the test binary serve the floor instead of running tests.
const floorEnv = "KVSHADOW_BENCH_FLOOR"

// benchValue is the value every benchmark key holds.
const benchValue = `{"word":"apple","guesses":3}`

var floorEnvelope = []byte(`{"success":true,"errors":[],"messages":[],"result":null}`)

// serveFloor is the child process: it prints its address, serves until its
// standard input closes (the parent exited or stopped it), then exits.
func serveFloor() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	value := []byte(benchValue)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	})}
	go func() { _ = srv.Serve(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// floor is the parent's side: the child process and a client of its own.
type floor struct {
	url    string
	client *http.Client
}

func startFloor(b *testing.B) *floor {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), floorEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("the floor's process did not start: %v", err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	b.Cleanup(tr.CloseIdleConnections)
	return &floor{url: "http://" + strings.TrimSpace(addr) + "/client/v4/accounts/" + account + "/storage/kv/namespaces/" + namespace + "/values/",
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
