package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCheckpointSurvivesKill runs the real shadow-report binary, kills it
// with SIGKILL half way through a scan (no signal handler, no deferred
// save: only what the checkpoint file already holds survives), resumes
// with the same command, and expects the uninterrupted result.
func TestCheckpointSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	r, whole := uninterrupted(t)

	bin := filepath.Join(t.TempDir(), "shadow-report")
	build := exec.Command("go", "build", "-o", bin, "github.com/kvshadow/kvshadow/cmd/shadow-report")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// 13 batches of 10 keys, one at a time, each bulk get held 300 ms: a
	// scan of about 4 s that saves its checkpoint every second.
	r.bulkDelay.Store(int64(300 * time.Millisecond))
	before := r.bulkGets.Load()
	checkpoint := filepath.Join(t.TempDir(), "scan.ckpt")
	args := []string{"--format", "json", "--ttl-tolerance", "2m", "--progress", "never",
		"--batch", "10", "--concurrency", "1", "--checkpoint", checkpoint}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Kill once a checkpoint with three batches committed is on disk, well before
	// the last batch.
	deadline := time.Now().Add(time.Minute)
	var saved struct {
		Scanned int64 `json:"scanned"`
	}
	for {
		raw, err := os.ReadFile(checkpoint)
		if err == nil && json.Unmarshal(raw, &saved) == nil && saved.Scanned >= 30 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the scan ended before it could be killed: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no checkpoint after a minute:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the scan was not killed: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("a killed scan printed a report:\n%s", stdout.String())
	}
	if n := r.bulkGets.Load() - before; n >= 13 {
		t.Fatalf("the scan read all %d batches before the kill", n)
	}

	r.bulkDelay.Store(0)
	resume(t, r, checkpoint, whole)
	t.Logf("killed after %d keys were checkpointed; the resumed scan matches the uninterrupted one", saved.Scanned)
}
