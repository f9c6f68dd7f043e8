package help_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
	testcommand "github.com/kvshadow/kvshadow/tests/command"
	"github.com/kvshadow/kvshadow/tests/mongotest"
)

// commands are the programs whose --help texts carry examples, by the name
// the examples call them.
var commands = map[string]string{
	"shadow-report":  "github.com/kvshadow/kvshadow/cmd/shadow-report",
	"kv-emulator":    "github.com/kvshadow/kvshadow/cmd/kv-emulator",
	"kvshadow-proxy": "github.com/kvshadow/kvshadow/cmd/kvshadow-proxy",
}

// The addresses the examples name for local servers; the test gives the
// emulator a port it binds itself (-addr 127.0.0.1:0, read back from what
// it prints: a shared machine may hold 8787 with a wrangler dev session, and
// a port picked and closed could be taken before the emulator binds it) and
// the embedded MongoDB-compatible server.
const (
	emulatorAddr = "127.0.0.1:8787"
	localMongo   = "mongodb://127.0.0.1:27017/miti99bot"
)

// TestHelpExamplesRunAsWritten runs every example of the --help texts that
// can run on this machine (no Cloudflare account: the demos and the local
// emulator) exactly as printed, apart from the addresses above, and
// expects none to be refused as a usage mistake. An example that needs an
// account is named in needsAccount, so that a new example cannot go
// unchecked.
func TestHelpExamplesRunAsWritten(t *testing.T) {
	bin := buildCommands(t)
	// A server of its own, whatever MONGODB_URI says: the examples name their
	// database (miti99bot), which another package's tests may fill.
	mongo, err := mongotest.Start(context.Background(), mongotest.Config{IgnoreEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mongo.Close() })
	ran := 0
	for name := range commands {
		help, err := exec.Command(filepath.Join(bin, name), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		for _, block := range examples(string(help)) {
			if needsAccount(block) {
				continue
			}
			ran++
			t.Run(name+"/"+block[len(block)-1].line, func(t *testing.T) {
				runBlock(t, bin, block, mongo.URI())
			})
		}
	}
	if ran < 3 {
		t.Fatalf("only %d examples ran", ran)
	}
}

// command is one example command line, continuations joined.
type command struct {
	line string
	env  []string
	args []string
	bg   bool // ends with &: a server the next lines use
}

var assignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// examples finds the command lines of a help text (those that call one of
// the commands, after optional VAR=value words) in blocks: lines in a
// row, up to a line that is not a command.
func examples(help string) [][]command {
	var blocks [][]command
	var cur []command
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(help))
	pending := ""
	for sc.Scan() {
		raw := strings.TrimSpace(sc.Text())
		if pending != "" {
			raw = pending + " " + raw
			pending = ""
		}
		if strings.HasSuffix(raw, `\`) {
			pending = strings.TrimSpace(strings.TrimSuffix(raw, `\`))
			continue
		}
		line, _, _ := strings.Cut(raw, " #")
		line = strings.TrimSpace(line)
		c, ok := parseCommand(line)
		if !ok {
			if strings.HasPrefix(line, "export ") || line == "" || strings.HasPrefix(line, "(") {
				// export lines and asides belong to the block
				if strings.HasPrefix(line, "export ") {
					cur = append(cur, command{line: line})
				}
				if line == "" {
					flush()
				}
				continue
			}
			flush()
			continue
		}
		cur = append(cur, c)
	}
	flush()
	// A block with only export lines is not an example.
	var out [][]command
	for _, b := range blocks {
		for _, c := range b {
			if c.args != nil {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

func parseCommand(line string) (command, bool) {
	c := command{line: line}
	if strings.HasSuffix(line, "&") {
		c.bg = true
		line = strings.TrimSpace(strings.TrimSuffix(line, "&"))
	}
	words := strings.Fields(line)
	for len(words) > 0 && assignment.MatchString(words[0]) {
		c.env = append(c.env, words[0])
		words = words[1:]
	}
	if len(words) == 0 {
		return c, false
	}
	if _, ok := commands[words[0]]; !ok {
		return c, false
	}
	// Usage lines with [flags] are synopses, not examples; a sentence
	// that starts with a command's name is prose.
	if strings.Contains(line, "[") || len(words) > 1 && !strings.HasPrefix(words[1], "-") {
		return c, false
	}
	c.args = words
	return c, true
}

// needsAccount reports whether an example reaches Cloudflare or a database
// only the reader has: one that exports placeholders ("...") or calls the
// proxy or the report without --demo and without a local primary.
func needsAccount(block []command) bool {
	local := false
	for _, c := range block {
		if strings.Contains(c.line, "...") {
			return true
		}
		if strings.Contains(c.line, "--demo") || strings.Contains(c.line, "127.0.0.1") || (len(c.args) > 0 && c.args[0] == "kv-emulator") {
			local = true
		}
	}
	return !local
}

// runBlock runs a block's commands in order in a fresh directory: servers
// (&) until the block ends, the others to their end, and no exit may be 2,
// the status of a usage mistake, or anything but 0 and 1 (the report's
// gate).
func runBlock(t *testing.T, bin string, block []command, mongoURI string) {
	dir := t.TempDir()
	emulator := "127.0.0.1:0" // until the emulator says where it serves
	mongoURI = strings.TrimSuffix(mongoURI, "/") + "/miti99bot"
	rewrite := func(s string) string {
		s = strings.ReplaceAll(s, emulatorAddr, emulator)
		return strings.ReplaceAll(s, localMongo, mongoURI)
	}
	var servers []*exec.Cmd
	defer func() {
		for _, s := range servers {
			_ = s.Process.Signal(syscall.SIGTERM)
			_ = s.Wait()
		}
	}()
	for _, c := range block {
		if c.args == nil {
			continue
		}
		args := make([]string, 0, len(c.args)+2)
		for _, a := range c.args[1:] {
			args = append(args, rewrite(a))
		}
		switch {
		case c.args[0] == "kv-emulator" && !strings.Contains(c.line, "-addr"):
			args = append(args, "-addr", emulator)
		case c.args[0] == "kvshadow-proxy" && !strings.Contains(c.line, "-listen"):
			args = append(args, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
		}
		cmd := exec.Command(filepath.Join(bin, c.args[0]), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none")
		for _, e := range c.env {
			cmd.Env = append(cmd.Env, rewrite(e))
		}
		var out syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if c.bg || c.args[0] == "kvshadow-proxy" {
			// A server: started, then awaited until it says where it
			// listens.
			found, err := testcommand.Announced(cmd, &out, listening)
			if err != nil {
				t.Fatal(err)
			}
			servers = append(servers, cmd)
			var at string
			select {
			case at = <-found:
			case <-time.After(2 * time.Minute):
				t.Fatalf("%s: never said where it listens\n%s", c.line, out.String())
			}
			if c.args[0] == "kv-emulator" {
				emulator = at
			}
			if c.args[0] == "kvshadow-proxy" {
				// It serves until a signal; it must stop cleanly on one.
				_ = cmd.Process.Signal(syscall.SIGTERM)
				err := cmd.Wait()
				servers = servers[:len(servers)-1]
				if err != nil {
					t.Errorf("%s: after SIGTERM: %v\n%s", c.line, err, out.String())
				}
			}
			continue
		}
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 0 && code != 1 {
			t.Errorf("%s: exit %d\n%s", c.line, code, out.String())
		}
	}
}

var listening = regexp.MustCompile(`http://(127\.0\.0\.1:[0-9]+)`)

func buildCommands(t *testing.T) string {
	dir := t.TempDir()
	for name, pkg := range commands {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, out)
		}
	}
	return dir
}
