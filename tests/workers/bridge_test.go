package workers_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

// startNode runs a script of workers/test/support with env added, decodes
// the one JSON line it prints once it is ready into v, and stops it when
// the test ends (closing its standard input).
func startNode(t *testing.T, script string, env []string, v any) {
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
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("%s exited before it was ready", script)
		}
		if err := json.Unmarshal([]byte(l), v); err != nil {
			t.Fatalf("%s said %q: %v", script, l, err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s was not ready within 3 minutes", script)
	}
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
	startNode(t, "run-bridge.js", []string{"KVSHADOW_BRIDGE_TOKEN=" + b.Token}, &b)
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
	})
}
