package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDemo runs the whole demo, shortened: the servers, the workload, the
// outage, the injected divergences and the report. It fails when any
// guarantee the demo checks fails.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about half a minute")
	}
	var out, errs bytes.Buffer
	err := run(t.Context(), []string{"-duration", "12s", "-rate", "120", "-dir", t.TempDir()}, &out, &errs)
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errs.String())
	}
	for _, want := range []string{"breaker closed -> open (expected: MongoDB is down on purpose", "injected 5 divergences",
		"The gate holds the cutover back here, as expected", "parity 100.00%", "skipped while the breaker was open",
		"stage live: MongoDB is authoritative", "stage shadow: back where the flip started", "(2 of 2 flips made)",
		"OK: the bot never felt the shadow nor the flip to live and back"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// One voice: no raw Go maps, no gate failure in a demo that passes,
	// no log line in another format, no warning nobody expected.
	for _, bad := range []string{"map[", "FAIL", "level=", "(unexpected)"} {
		if strings.Contains(out.String()+errs.String(), bad) {
			t.Errorf("demo output holds %q:\n%s\n%s", bad, out.String(), errs.String())
		}
	}
	// repaired= counts keys copied or deleted, never deferred ones, so it
	// ends at the summary's repairs.
	statuses := regexp.MustCompile(`repaired=(\d+)`).FindAllStringSubmatch(out.String(), -1)
	summary := regexp.MustCompile(`Repair of the dirty keys: (.*)\.`).FindStringSubmatch(out.String())
	if len(statuses) == 0 || summary == nil {
		t.Fatalf("no status line or no repair summary:\n%s", out.String())
	}
	var real int
	for _, m := range regexp.MustCompile(`(\d+) (copied|deleted)`).FindAllStringSubmatch(summary[1], -1) {
		n, _ := strconv.Atoi(m[1])
		real += n
	}
	if last := statuses[len(statuses)-1][1]; last != strconv.Itoa(real) {
		t.Errorf("the last status says repaired=%s, the summary %d copied or deleted (%s)", last, real, summary[1])
	}
	if strings.Contains(out.String()+errs.String(), demoToken) {
		t.Error("the demo printed its API token")
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "1s"},
		{"-workers", "0"},
		{"-dir", ""},
		{"extra"},
		{"-bogus"},
	} {
		var errs bytes.Buffer
		err := run(t.Context(), args, &bytes.Buffer{}, &errs)
		if !errors.Is(err, errUsage) || exitCode(err, &errs) != 2 || !strings.Contains(errs.String(), "-help") {
			t.Errorf("%q: %v, exit %d, stderr %q", args, err, exitCode(err, &errs), errs.String())
		}
	}
	// -help prints a usage that works from where it says, and exits 0.
	var out bytes.Buffer
	err := run(t.Context(), []string{"-help"}, &out, &bytes.Buffer{})
	if !errors.Is(err, flag.ErrHelp) || exitCode(err, &out) != 0 || !strings.Contains(out.String(), "make demo DEMO_FLAGS=") ||
		!strings.Contains(out.String(), "in demo/:          go run . [flags]") || !strings.Contains(out.String(), "-duration") {
		t.Errorf("-help: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "go run ./demo") {
		t.Error("-help suggests go run ./demo, which fails: the demo is a module of its own")
	}
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || c.duration.Seconds() >= 120 {
		t.Fatalf("defaults = %+v, %v; want a run well under two minutes", c, err)
	}
}
