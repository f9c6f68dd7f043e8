package deploy_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/tools"
	"github.com/kvshadow/kvshadow/service"
)

// need makes sure the commands are there (tools.Need).
func need(t *testing.T, pairs ...string) {
	t.Helper()
	tools.Need(t, "../scripts/need.sh", pairs...)
}

// stopTime is what a deployment form must give the proxy between SIGTERM
// and SIGKILL: an orchestrator's pause before the signal, then the
// service's own delay, grace and drain, and a margin for the journal's last
// commit and leaving the control board.
func stopTime(pause time.Duration, c *service.Config) time.Duration {
	return pause + c.ShutdownDelay + c.Grace + c.Drain + stopMargin
}

const stopMargin = 5 * time.Second

// parseArgs runs the service's own parser over a deployment's command line,
// with its secret files mapped to files in a temporary directory holding
// secrets (name -> value): what the binary would accept, with the defaults
// it would take.
func parseArgs(t *testing.T, args []string, env map[string]string, secretDir string, secrets map[string]string) *service.Config {
	t.Helper()
	dir := t.TempDir()
	for name, value := range secrets {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mapped := make([]string, len(args))
	for i, a := range args {
		mapped[i] = strings.ReplaceAll(a, secretDir+"/", dir+"/")
	}
	c, err := service.Parse(mapped, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("kvshadow-proxy refuses the command line %q: %v", args, err)
	}
	return c
}

// secretFiles are the flags that read a secret from a file, each with the
// file it names.
func secretFiles(args []string) map[string]string {
	out := map[string]string{}
	for i, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok && i+1 < len(args) {
			value = args[i+1]
		}
		if strings.HasSuffix(name, "-file") {
			out[name] = value
		}
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// demo is the service's demo, running in the test's process.
type demo struct{ api, admin string }

// startDemo runs kvshadow-proxy --demo on free loopback ports until the
// test ends.
func startDemo(t *testing.T) demo {
	t.Helper()
	c, err := service.Parse([]string{"--demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	up := make(chan service.Listening, 1)
	go func() {
		done <- service.Run(ctx, c, io.Discard, io.Discard, service.WithListening(func(l service.Listening) { up <- l }))
	}()
	select {
	case at := <-up:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("the demo stopped with %v", err)
			}
		})
		return demo{api: at.API, admin: at.Admin}
	case err := <-done:
		cancel()
		t.Fatalf("the demo did not start: %v", err)
	}
	return demo{}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// checkBudget: the memory budget is set, and under the form's memory limit
// by at least a tenth, which the budget does not count (stacks, buffers of
// the stores' clients).
func checkBudget(t *testing.T, form string, c *service.Config, limit int64) {
	t.Helper()
	if c.MemoryBudget <= 0 || limit <= 0 || c.MemoryBudget > limit*9/10 {
		t.Errorf("%s: --memory-budget %d bytes against a memory limit of %d: want the budget set, at most 90%% of the limit", form, c.MemoryBudget, limit)
	}
}
