package kvapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/membudget"
)

// memoryChildEnv, set, makes TestMemoryBudgetChild serve a front whose
// memory budget is that many bytes, until its stdin closes.
const memoryChildEnv = "KVAPI_MEMORY_BUDGET_CHILD"

// TestMemoryBudgetChild is the process TestBulkGetsStayInTheBudget
// measures; it does nothing in a plain test run.
func TestMemoryBudgetChild(t *testing.T) {
	limit, err := strconv.ParseInt(os.Getenv(memoryChildEnv), 10, 64)
	if err != nil {
		t.Skip("run by TestBulkGetsStayInTheBudget")
	}
	mem, err := membudget.New(membudget.Config{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	mem.SetProcessLimit()
	api, err := kvapi.New(kvapi.Config{Namespaces: map[string]kv.Store{namespace: memory.New(memory.Config{})}, AccountID: account, Token: "t", Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := kvapi.NewHTTPServer(api, kvapi.ServeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = hs.Close()
}

// TestBulkGetsStayInTheBudget: concurrent bulk gets of one 25 MiB value that
// is not UTF-8, each answered as about 150 MiB of escaped JSON, keep the
// serving process's peak memory (its own VmHWM) under its budget: those the
// budget cannot pay for wait, then get 503 with Retry-After, in the
// envelope.
func TestBulkGetsStayInTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("moves about a gigabyte over loopback")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the peak memory")
	}
	const budget = 320 << 20
	cmd := exec.Command(memoryChild(t), "-test.run=^TestMemoryBudgetChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", memoryChildEnv, budget))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the child said %q: %v", line, err)
	}
	base := "http://" + addr + nsPath("")
	do := func(method, path string, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(context.Background(), method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer t")
		return http.DefaultClient.Do(req)
	}
	value := bytes.Repeat([]byte{0xff}, kv.MaxValueSize) // each byte is answered as \ufffd
	res, err := do("PUT", "values/big", value)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %v %v", res, err)
	}
	res.Body.Close()
	value = nil

	const requests = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	served, refused := 0, 0
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := do("POST", "bulk/get", []byte(`{"keys":["big"]}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable {
				var env struct {
					Success bool
					Errors  []struct{ Code int }
				}
				if err := json.NewDecoder(res.Body).Decode(&env); err != nil || env.Success || len(env.Errors) != 1 || env.Errors[0].Code != kvapi.CodeUnavailable || res.Header.Get("Retry-After") == "" {
					t.Errorf("a refusal that is not Cloudflare's 503 with Retry-After: %v %+v", err, env)
				}
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			n, err := io.Copy(io.Discard, res.Body)
			if res.StatusCode != http.StatusOK || err != nil || n < 6*kv.MaxValueSize {
				t.Errorf("bulk get: %d, %d bytes, %v", res.StatusCode, n, err)
				return
			}
			mu.Lock()
			served++
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := peakRSS(t, cmd.Process.Pid)
	t.Logf("%d bulk gets of a 25 MiB value answered as 150 MiB: %d served, %d refused; peak RSS %d MiB, budget %d MiB", requests, served, refused, peak>>20, budget>>20)
	if served == 0 {
		t.Error("no bulk get was served")
	}
	if peak >= budget {
		t.Errorf("peak RSS %d MiB, over the budget of %d MiB", peak>>20, budget>>20)
	}
}

// memoryChild returns the test binary that serves as the measured process:
// this one, or, under the race detector (whose shadow memory would be
// measured with the process's own), this package's tests built without it.
func memoryChild(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return os.Args[0]
	}
	bin := t.TempDir() + "/kvapi.test"
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the measured process without the race detector: %v\n%s", err, out)
	}
	return bin
}

// peakRSS reads a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}
