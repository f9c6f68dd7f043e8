package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
)

// build compiles the command once for the package's tests, into binDir.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var buildOnce = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "kvshadow-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kvshadow/kvshadow/cmd/kvshadow-proxy").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// process is the command running as an instance of its own.
type process struct {
	*instance
	cmd    *exec.Cmd
	exited chan error
	output syncbuf.Buffer
	// serving is the banner's first line.
	serving string
}

// log is what the process wrote, its log (standard error) and its banner
// (standard output), in the order it wrote them.
func (p *process) log() string { return p.output.String() }

func startProcess(t *testing.T, bin string, env map[string]string, args ...string) *process {
	t.Helper()
	p := &process{exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--consistency-window", "0", "--fence-interval", "0"}, args...)...)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	// One pipe for both, read by one goroutine: what the process logged
	// before its banner is in the log once the banner is read, and all it
	// wrote once it has exited (two pipes, each copied by a goroutine of
	// its own, made no promise of either, and a test that read the start's
	// log at once could miss a line on a loaded machine).
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	br, bw := io.Pipe()
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.MultiWriter(&p.output, bw), pr)
		pr.Close()
		bw.Close()
		close(drained)
	}()
	go func() { err := p.cmd.Wait(); <-drained; p.exited <- err }()
	api, admin, database, serving := banner(t, br)
	p.serving = serving
	if admin == "" {
		_ = p.cmd.Process.Kill()
		t.Fatalf("the command did not start: %v\n%s", <-p.exited, p.log())
	}
	// It says at start which database the shadow uses.
	if db := env["MONGODB_DB"]; db != "" && !strings.HasPrefix(database, namespace+" -> "+db+";") {
		t.Errorf("the banner names the shadow's database as %q, want %s -> %s", database, namespace, db)
	}
	var once sync.Once
	var result error
	p.instance = &instance{api: api, admin: admin, stop: func() error {
		once.Do(func() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case result = <-p.exited:
			case <-time.After(time.Minute):
				_ = p.cmd.Process.Kill()
				result = errors.New("no exit a minute after SIGTERM")
			}
		})
		return result
	}}
	t.Cleanup(func() { _ = p.stop() })
	return p
}
