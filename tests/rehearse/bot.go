package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// botProcess is workers/test/support/run-realbot.js: the bot with the real
// bot's storage shape (its createStore, DualKVStore, MongoKVStore and
// drift-verifier) and the bridge, in miniflare over one persisted KV
// namespace, driven by one JSON command a line.
type botProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startBot(ctx context.Context, workers string, env []string) (*botProcess, error) {
	for _, dep := range []string{"miniflare", "mongodb"} {
		if _, err := os.Stat(filepath.Join(workers, "node_modules", dep)); err != nil {
			return nil, fmt.Errorf("%s is not installed: run `npm ci` in %s (make rehearse does)", dep, workers)
		}
	}
	cmd := exec.CommandContext(ctx, "node", filepath.Join("test", "support", "run-realbot.js"))
	cmd.Dir = workers
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &botProcess{cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		close(b.lines)
	}()
	return b, nil
}

// do sends one command and decodes its answer into v; an answer with an
// error is the command's failure.
func (b *botProcess) do(command map[string]any, v any, d time.Duration) error {
	line, err := json.Marshal(command)
	if err != nil {
		return err
	}
	if _, err := b.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("the bot's miniflare: %w", err)
	}
	return b.next(v, d)
}

func (b *botProcess) next(v any, d time.Duration) error {
	select {
	case l, ok := <-b.lines:
		if !ok {
			return errors.New("the bot's miniflare exited")
		}
		var failed struct {
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(l), &failed) == nil && failed.Error != "" {
			return errors.New(failed.Error)
		}
		return json.Unmarshal([]byte(l), v)
	case <-time.After(d):
		return fmt.Errorf("the bot said nothing within %s", d)
	}
}

// deploy redeploys the bot with vars, as `wrangler deploy` with these
// [vars] and secrets would; its KV data stays.
func (b *botProcess) deploy(vars map[string]string) error {
	var ok struct {
		Deployed bool `json:"deployed"`
	}
	return b.do(map[string]any{"cmd": "deploy", "vars": vars}, &ok, 2*time.Minute)
}

// read is what the bot, as deployed, reads of full keys (module:key), in
// one invocation.
func (b *botProcess) read(keys []string) ([]*string, error) {
	var r struct {
		Values []*string `json:"values"`
	}
	if err := b.do(map[string]any{"cmd": "read", "keys": keys}, &r, time.Minute); err != nil {
		return nil, err
	}
	if len(r.Values) != len(keys) {
		return nil, fmt.Errorf("the bot read %d values of %d keys", len(r.Values), len(keys))
	}
	return r.Values, nil
}

func (b *botProcess) stop() {
	_ = b.stdin.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}
