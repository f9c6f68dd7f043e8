package workers_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/kvtest"
)

// bridge is a running bridge Worker.
type bridge struct {
	URL, Account, Namespace, Token string
}

// nodeScript is a running script of workers/test/support that speaks in
// JSON lines on its standard output and listens to its standard input.
type nodeScript struct {
	t     *testing.T
	name  string
	stdin io.WriteCloser
	lines chan string
}

// next decodes the script's next line into v, failing the test if none
// comes within d.
func (n *nodeScript) next(v any, d time.Duration) {
	n.t.Helper()
	select {
	case l, ok := <-n.lines:
		if !ok {
			n.t.Fatalf("%s exited early", n.name)
		}
		if err := json.Unmarshal([]byte(l), v); err != nil {
			n.t.Fatalf("%s said %q: %v", n.name, l, err)
		}
	case <-time.After(d):
		n.t.Fatalf("%s said nothing within %s", n.name, d)
	}
}

// say writes one line to the script.
func (n *nodeScript) say(line string) {
	n.t.Helper()
	if _, err := io.WriteString(n.stdin, line+"\n"); err != nil {
		n.t.Fatalf("%s: %v", n.name, err)
	}
}

// startNode runs a script of workers/test/support with env added, and
// stops it when the test ends (closing its standard input).
func startNode(t *testing.T, script string, env []string) *nodeScript {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: the Workers run in miniflare under Node")
	}
	pkg, err := filepath.Abs(filepath.Join("..", "..", "workers"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "node_modules", "miniflare")); err != nil {
		t.Fatalf("miniflare is not installed: run `npm ci` in %s (make test does)", pkg)
	}
	cmd := exec.Command(node, filepath.Join("test", "support", script))
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	n := &nodeScript{t: t, name: script, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			n.lines <- sc.Text()
		}
		close(n.lines)
	}()
	return n
}

// newToken returns a random token for one test.
func newToken() string {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}

// startBridge runs the bridge Worker in miniflare (run-bridge.js).
func startBridge(t *testing.T) bridge {
	t.Helper()
	b := bridge{Token: newToken()}
	startNode(t, "run-bridge.js", []string{"KVSHADOW_BRIDGE_TOKEN=" + b.Token}).next(&b, 3*time.Minute)
	return b
}

func (b bridge) store(t *testing.T) *cfkv.Store {
	t.Helper()
	st, err := cfkv.New(cfkv.Config{
		AccountID:   b.Account,
		NamespaceID: b.Namespace,
		APIToken:    b.Token,
		BaseURL:     b.URL,
		MaxRetries:  3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// empty deletes every key, so that each subtest starts from an empty
// namespace on the one binding the bridge has.
func empty(t *testing.T, st *cfkv.Store) {
	t.Helper()
	ctx := context.Background()
	cursor := ""
	for {
		res, err := st.List(ctx, kv.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatalf("List to empty the namespace: %v", err)
		}
		if len(res.Keys) > 0 {
			if err := st.DeleteMany(ctx, res.Keys); err != nil {
				t.Fatalf("DeleteMany to empty the namespace: %v", err)
			}
		}
		if res.Done {
			return
		}
		cursor = res.Cursor
	}
}

// TestConformanceThroughBridge runs the whole kv suite through cfkv
// against the bridge Worker in workerd, on real time (the suite then waits
// out its expiries, about 95 s).
func TestConformanceThroughBridge(t *testing.T) {
	b := startBridge(t)
	kvtest.Run(t, kvtest.Harness{
		New: func(t *testing.T) kv.Store {
			st := b.store(t)
			empty(t, st)
			return st
		},
		ListsInfo: true, // workerd's KV lists each key's expiration and metadata
	})
}
