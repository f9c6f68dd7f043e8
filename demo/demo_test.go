package main

import (
	"bytes"
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
	for _, want := range []string{"breaker closed -> open", "injected 5 divergences", "parity 100.00%", "OK: the bot never felt the shadow"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
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
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || c.duration.Seconds() >= 120 {
		t.Fatalf("defaults = %+v, %v; want a run well under two minutes", c, err)
	}
}
