// Command testlog reads `go test -json` on stdin and says what runs as it
// runs, for `make test`: each package as it starts and ends, each test that
// takes a while, a line every 30 seconds naming the tests still running,
// and the whole output of every failed test. It exits 1 when a test or a
// package failed, so that a pipeline fails without pipefail.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		errc <- sc.Err()
	}()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	failed := run(lines, tick.C, os.Stdout)
	if err := <-errc; err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// slowTest is how long a test runs before its end is worth a line.
const slowTest = 5 * time.Second

type running struct {
	pkg, test string
	since     time.Time
}

// run reads lines until the channel closes. A line that is not JSON (a
// build error, a vet report) is printed as it is. At each tick it names the
// tests still running, so that a long quiet test is never silence.
func run(lines <-chan []byte, ticks <-chan time.Time, out io.Writer) (failed bool) {
	outputs := map[string][]string{} // pkg/test -> lines, while running
	tests := map[string]running{}
	for {
		var line []byte
		select {
		case t := <-ticks:
			if len(tests) > 0 {
				fmt.Fprintf(out, "    still running: %s\n", stillRunning(tests, t))
			}
			continue
		case l, ok := <-lines:
			if !ok {
				return failed
			}
			line = l
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		id := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			fmt.Fprint(out, "    "+e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Test == "" && e.Action == "start":
			fmt.Fprintf(out, "  %s: running\n", e.Package)
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			word := map[string]string{"pass": "ok", "fail": "FAIL", "skip": "no tests"}[e.Action]
			if e.Action == "fail" {
				failed = true
				// A package that failed outside any test (a build
				// error, a panic in TestMain) shows its output.
				for _, l := range outputs[id] {
					fmt.Fprint(out, "    "+l)
				}
			}
			fmt.Fprintf(out, "  %s: %s (%s)\n", e.Package, word, seconds(e.Elapsed))
			delete(outputs, id)
		case e.Action == "run":
			tests[id] = running{pkg: e.Package, test: e.Test, since: e.Time}
		case e.Action == "output":
			outputs[id] = append(outputs[id], e.Output)
		case e.Action == "pass" || e.Action == "skip":
			if d := time.Duration(e.Elapsed * float64(time.Second)); d >= slowTest && !strings.Contains(e.Test, "/") {
				fmt.Fprintf(out, "    %s %s passed in %s\n", short(e.Package), e.Test, seconds(e.Elapsed))
			}
			delete(tests, id)
			delete(outputs, id)
		case e.Action == "fail":
			failed = true
			// test2json gives a subtest's lines its own name: a failed
			// subtest shows them, its parent the parent's.
			fmt.Fprintf(out, "    %s %s FAILED in %s:\n", short(e.Package), e.Test, seconds(e.Elapsed))
			for _, l := range outputs[id] {
				fmt.Fprint(out, "      "+l)
			}
			delete(tests, id)
			delete(outputs, id)
		}
	}
}

// stillRunning names the top-level tests that run, the longest first.
func stillRunning(tests map[string]running, now time.Time) string {
	var top []running
	for _, r := range tests {
		if !strings.Contains(r.test, "/") {
			top = append(top, r)
		}
	}
	slices.SortFunc(top, func(a, b running) int { return a.since.Compare(b.since) })
	var parts []string
	for i, r := range top {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(top)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", short(r.pkg), r.test, now.Sub(r.since).Round(time.Second)))
	}
	return strings.Join(parts, ", ")
}

func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }

// short drops the module path from a package: tests/report.
func short(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, "github.com/kvshadow/kvshadow"), "/")
}
