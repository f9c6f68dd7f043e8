package tools

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Need makes sure the commands are there, running the project's
// scripts/need.sh (at script, relative to the test's directory) with
// "cmd:package" pairs. Where they cannot be installed (its exit code 3) the
// test is skipped, saying why, unless KVSHADOW_REQUIRE_DEPLOY_TOOLS=1 (CI)
// makes that a failure; any other failure fails the test.
func Need(t testing.TB, script string, pairs ...string) {
	t.Helper()
	out, err := exec.Command(script, pairs...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return
	case errors.As(err, &exit) && exit.ExitCode() == 3 && os.Getenv("KVSHADOW_REQUIRE_DEPLOY_TOOLS") != "1":
		t.Skipf("skipped: %s", strings.TrimSpace(string(out)))
	}
	t.Fatalf("%s %s: %v\n%s", script, strings.Join(pairs, " "), err, out)
}
