package proxy_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/kvapi"
	"github.com/kvshadow/kvshadow/service"
	"github.com/kvshadow/kvshadow/tests/nodescript"
	"github.com/kvshadow/kvshadow/tests/proxytest"
)

// The benchmarks run each party in a process of its own, as a deployment
// does: the emulated Workers KV (its latency set by the benchmark), the
// proxy over it, and the floor (floor_test.go). The test binary is each
// child: childEnv names the role, and the child prints its addresses on
// one line, then serves until its standard input closes (the parent exited
// or is done with it).

// childEnv makes the test binary serve a benchmark's role instead of
// running tests.
const childEnv = "KVSHADOW_BENCH_CHILD"

// The children's parameters.
const (
	latencyEnv = "KVSHADOW_BENCH_LATENCY" // the emulator's added latency
	primaryEnv = "KVSHADOW_BENCH_PRIMARY" // the proxy's primary
	// profileEnv names a file for the CPU profiles of the proxy child and
	// the SDK forwarder's, taken over their whole life at 1 kHz: set it
	// when running the benchmark to see where their time goes (go tool
	// pprof FILE.3ms.proxy, FILE.3ms.sdkforwarder: files per latency).
	profileEnv = "KVSHADOW_BENCH_PROXY_PROFILE"
	// allocsEnv names a file for their allocation profiles, every
	// allocation recorded (MemProfileRate 1, which slows them), named as
	// profileEnv's, for go tool pprof -sample_index=alloc_objects.
	allocsEnv = "KVSHADOW_BENCH_PROXY_ALLOCS"
	// procsEnv, when set, is the proxy child's GOMAXPROCS (the others keep
	// the machine's): set it to 1 to see what the wake of an idle
	// processor costs a request at low load, the copy's worker on a Put
	// above all (README).
	procsEnv = "KVSHADOW_BENCH_PROXY_GOMAXPROCS"
	// stageEnv, when set, is the proxy child's stage instead of dualwrite:
	// off to see what the copies cost a caller (none are made).
	stageEnv = "KVSHADOW_BENCH_PROXY_STAGE"
)

// serveChild runs the role the environment names, if any, and exits.
func serveChild() {
	role := os.Getenv(childEnv)
	if role == "" {
		return
	}
	var (
		addrs []string
		stop  func()
		err   error
	)
	switch role {
	case "floor":
		addrs, stop, err = serveFloor()
	case "emulator":
		addrs, stop, err = serveEmulator(os.Getenv(latencyEnv))
	case "forwarder":
		addrs, stop, err = serveForwarder(os.Getenv(primaryEnv))
		if err == nil {
			addrs, stop, err = withProbe(addrs, stop)
		}
	case "sdkforwarder":
		addrs, stop, err = serveSDKForwarder(os.Getenv(primaryEnv))
		if err == nil {
			addrs, stop, err = withProbe(addrs, stop)
		}
	case "proxy":
		addrs, stop, err = serveProxy(os.Getenv(primaryEnv))
	default:
		err = fmt.Errorf("no role %q", role)
	}
	if path := os.Getenv(profileEnv); err == nil && path != "" && (role == "proxy" || role == "sdkforwarder") {
		stop, err = profiled(path+"."+role, stop)
	}
	if path := os.Getenv(allocsEnv); err == nil && path != "" && (role == "proxy" || role == "sdkforwarder") {
		stop = allocsProfiled(path+"."+role, stop)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchmark child %s: %v\n", role, err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(addrs, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	os.Exit(0)
}

// profiled starts a CPU profile into path that stop ends.
func profiled(path string, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	runtime.SetCPUProfileRate(1000) // StartCPUProfile's 100 Hz then says it keeps this one
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() { stop(); pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// allocsProfiled records every allocation from now on, and has stop write
// them to path.
func allocsProfiled(path string, stop func()) func() {
	runtime.MemProfileRate = 1
	return func() {
		stop()
		runtime.GC() // the profile holds what the last collection saw
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}
	}
}

// serve answers h on a loopback port of its own.
func serve(h http.Handler) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// serveEmulator is Workers KV emulated over the memory store, each request
// delayed by latency.
func serveEmulator(latency string) ([]string, func(), error) {
	d, err := time.ParseDuration(latency)
	if err != nil {
		return nil, nil, err
	}
	faults := &kvapi.Faults{}
	faults.SetLatency(d)
	em, err := kvapi.Emulate(kvapi.Config{AccountID: account, Token: primaryToken, Faults: faults}, namespace)
	if err != nil {
		return nil, nil, err
	}
	return []string{em.URL}, func() { _ = em.Stop(context.Background()) }, nil
}

// serveProxy is kvshadow-proxy over primary in stage dualwrite, with its
// default settings and a memory shadow (what a caller waits for is the
// primary alone), and a probe that reports the process's allocations and
// goroutines started so far (see probe).
func serveProxy(primary string) ([]string, func(), error) {
	env, backends := overMemoryShadow(primary)
	args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--instance", "bench-proxy", "--stage", cmp.Or(os.Getenv(stageEnv), "dualwrite"), "--new-pairing", "--max-concurrent", "1024"}
	at, stop, err := proxytest.Run(context.Background(), env, io.Discard, args, service.WithBackends(backends))
	if err != nil {
		return nil, nil, err
	}
	return withProbe([]string{at.API}, func() { _ = stop() })
}

// withProbe adds to a child's addresses a probe that reports the process's
// counters (see probe), and to its stop the probe's.
func withProbe(addrs []string, stop func()) ([]string, func(), error) {
	probeURL, stopProbe, err := serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, readCounters())
	}))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return append(addrs, probeURL), func() { stopProbe(); stop() }, nil
}

// counters is what a child's probe reports: the process's heap
// allocations (runtime.MemStats.Mallocs, what -benchmem counts), the
// goroutines it has started and the CPU time it has used, user and system
// (getrusage), in microseconds.
type counters struct{ allocs, goroutines, cpuMicros uint64 }

func (c counters) String() string {
	return fmt.Sprintf("%d %d %d", c.allocs, c.goroutines, c.cpuMicros)
}

func readCounters() counters {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(created)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return counters{allocs: ms.Mallocs, goroutines: created[0].Value.Uint64(), cpuMicros: uint64(cpu.Microseconds())}
}

// probe reads a proxy child's counters.
func probe(b *testing.B, url string) counters {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var c counters
	if _, err := fmt.Fscan(resp.Body, &c.allocs, &c.goroutines, &c.cpuMicros); err != nil {
		b.Fatalf("a child's probe: %v", err)
	}
	return c
}

// startChild starts the test binary in role with env, and returns the
// addresses it printed. The child stops when the benchmark ends.
func startChild(b *testing.B, role string, env ...string) []string {
	b.Helper()
	env = append(env, childEnv+"="+role)
	if n := os.Getenv(procsEnv); n != "" && role == "proxy" {
		env = append(env, "GOMAXPROCS="+n)
	}
	child, err := nodescript.Run("the benchmark's "+role+" process", exec.Command(os.Args[0]), env...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(child.Stop)
	line, err := child.Next(time.Minute)
	if err != nil {
		b.Fatalf("the benchmark's %s process did not start: %v", role, err)
	}
	return strings.Fields(line)
}
