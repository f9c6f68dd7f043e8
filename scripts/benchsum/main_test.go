package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/kvshadow/kvshadow/dualwrite
BenchmarkOverhead/Put/memory    	 1000	       300.0 ns/op	      1 allocs/op
BenchmarkOverhead/Put/dualwrite 	 1000	       900.0 ns/op	      6 allocs/op
BenchmarkOverhead/Put/memory    	 1000	       100.0 ns/op	      1 allocs/op
BenchmarkOverhead/Put/dualwrite 	 1000	      1100 ns/op	      6 allocs/op
BenchmarkOverhead/Put/memory    	 1000	       200.0 ns/op	      1 allocs/op
BenchmarkOverhead/Put/dualwrite 	 1000	      1000 ns/op	      7 allocs/op
BenchmarkOverhead/Put/memory logs a line that is no result
pkg: github.com/kvshadow/kvshadow/tests/proxy
BenchmarkProxyLatency/emulator=0s/Get-2 	 100	 4 ns/op	 1.5 p50-ratio	 120 proxy-allocs/req
BenchmarkProxyLatency/emulator=0s/Get-2 	 100	 4 ns/op	 1.2 p50-ratio	 110 proxy-allocs/req
BenchmarkProxyLatency/emulator=0s/Get-2 	 100	 4 ns/op	 1.4 p50-ratio	 100 proxy-allocs/req
BenchmarkProxyLatency/emulator=0s/Get-2 	 100	 4 ns/op	 1.1 p50-ratio	 130 proxy-allocs/req
PASS
`

func TestSummaryAndDiff(t *testing.T) {
	r := newResults()
	if err := r.read(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	if err := r.diff("dualwrite.Overhead/Put/dualwrite", "dualwrite.Overhead/Put/memory"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := r.print(&out); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			rows[strings.Join(f[:len(f)-4], " ")] = f[len(f)-4:]
		}
	}
	for row, want := range map[string]string{
		"dualwrite.Overhead/Put/memory ns/op":                              "100 200 300 3",
		"dualwrite.Overhead/Put/dualwrite allocs/op":                       "6 6 7 3",
		"dualwrite.Overhead/Put/dualwrite - Overhead/Put/memory ns/op":     "600 800 1000 3",
		"dualwrite.Overhead/Put/dualwrite - Overhead/Put/memory allocs/op": "5 5 6 3",
		// An even count's median is the mean of the middle two.
		"proxy.ProxyLatency/emulator=0s/Get p50-ratio":        "1.1 1.3 1.5 4",
		"proxy.ProxyLatency/emulator=0s/Get proxy-allocs/req": "100 115 130 4",
	} {
		if got := strings.Join(rows[row], " "); got != want {
			t.Errorf("%s: min median max runs = %q, want %q\n%s", row, got, want, out.String())
		}
	}
	if err := r.diff("dualwrite.Overhead/Put/missing", "dualwrite.Overhead/Put/memory"); err == nil {
		t.Error("a diff with a missing benchmark was accepted")
	}
}
