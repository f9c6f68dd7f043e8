package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/internal/report/cli"
)

func TestRun(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errb); err != nil || !strings.Contains(out.String(), "shadow-report --demo") {
		t.Fatalf("--help: %v\n%s", err, out.String())
	}
	out.Reset()
	err := run(context.Background(), []string{"--demo", "--format", "json"}, &out, &errb)
	if cli.ExitCode(err) != cli.ExitBelowParity || !strings.Contains(out.String(), `"passed": false`) {
		t.Fatalf("--demo: %v\n%s", err, out.String())
	}
}
