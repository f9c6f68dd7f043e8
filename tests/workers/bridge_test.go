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

// startBridge runs workers/test/support/run-bridge.js and stops it when
// the test ends (closing its standard input).
func startBridge(t *testing.T) bridge {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: the bridge Worker runs in miniflare under Node")
	}
	pkg, err := filepath.Abs(filepath.Join("..", "..", "workers"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "node_modules", "miniflare")); err != nil {
		t.Fatalf("miniflare is not installed: run `npm ci` in %s (make test does)", pkg)
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	cmd := exec.Command(node, filepath.Join("test", "support", "run-bridge.js"))
	cmd.Dir = pkg
	cmd.Env = append(os.Environ(), "KVSHADOW_BRIDGE_TOKEN="+token)
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
	var b bridge
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("run-bridge.js exited before it listened")
		}
		if err := json.Unmarshal([]byte(l), &b); err != nil {
			t.Fatalf("run-bridge.js said %q: %v", l, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the bridge did not start within 60 s")
	}
	b.Token = token
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
