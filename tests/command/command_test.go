package command

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Main exits as every command does: 0, 1 with "name: FAIL: ..." on a
// failure, 2 on a usage mistake (Parse's, whatever the flag), said on
// standard error; -help is no mistake. Each case runs in a child process,
// as os.Exit needs.
func TestMainExitCodes(t *testing.T) {
	if how := os.Getenv("COMMAND_TEST_MAIN"); how != "" {
		os.Args = append([]string{"cmd"}, strings.Fields(os.Getenv("COMMAND_TEST_ARGS"))...)
		Main("cmd", func(_ context.Context, args []string, out io.Writer) error {
			fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
			fs.SetOutput(out)
			if done, err := Parse(fs, args); done {
				return err
			}
			if how == "fail" {
				return errors.New("it broke")
			}
			return nil
		})
		return
	}
	for _, c := range []struct {
		how, arg string
		code     int
		says     string
	}{{"ok", "", 0, ""}, {"ok", "-help", 0, ""}, {"fail", "", 1, "cmd: FAIL: it broke\n"}, {"ok", "-bogus", 2, "cmd: usage: flag provided but not defined: -bogus\n"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainExitCodes$")
		cmd.Env = append(os.Environ(), "COMMAND_TEST_MAIN="+c.how, "COMMAND_TEST_ARGS="+c.arg)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if e := (*exec.ExitError)(nil); errors.As(err, &e) {
			code = e.ExitCode()
		}
		if code != c.code || !strings.HasSuffix(stderr.String(), c.says) || (c.says == "" && stderr.Len() > 0) {
			t.Errorf("%s %q: exit %d, said %q; want %d and %q", c.how, c.arg, code, stderr.String(), c.code, c.says)
		}
	}
}
