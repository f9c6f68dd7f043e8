package main

import (
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/service"
)

func TestHelpAndUsage(t *testing.T) {
	var out, errb strings.Builder
	err := run(t.Context(), []string{"--help"}, &out, &errb)
	if service.ExitCode(err) != 0 || !strings.Contains(out.String(), "kvshadow-proxy --demo") {
		t.Fatalf("--help: exit %d, %q", service.ExitCode(err), out.String())
	}
	out.Reset()
	err = run(t.Context(), []string{"--no-such-flag"}, &out, &errb)
	if service.ExitCode(err) != 2 || !strings.Contains(errb.String(), "--help") || out.Len() != 0 {
		t.Fatalf("bad flag: exit %d, stderr %q", service.ExitCode(err), errb.String())
	}
}
