package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/internal/report"
)

// bigFixture is 3 modules x 400 keys with known divergences, scanned in
// batches of 25 keys from pages of 60, so that an interruption falls in the
// middle of pages and batches.
func bigFixture(t *testing.T) (*fixture, report.Config) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	manyKeys(t, f, []string{"alpha", "beta", "gamma"}, 400)
	cfg := f.config()
	cfg.KeyPolicy = "" // hmac, with a random secret the checkpoint must keep
	cfg.Secret = nil
	cfg.BatchSize, cfg.ListLimit, cfg.Concurrency = 25, 60, 3
	cfg.Checkpoint = filepath.Join(t.TempDir(), "scan.checkpoint")
	return f, cfg
}

func TestCheckpointResumeGivesTheUninterruptedResult(t *testing.T) {
	for _, stopAfter := range []int{1, 7, 20, 47} {
		f, cfg := bigFixture(t)
		var notices bytes.Buffer
		cfg.Notices = &notices
		err := f.interrupt(cfg, stopAfter)
		if !errors.Is(err, report.ErrInterrupted) || !strings.Contains(err.Error(), "resume") {
			t.Fatalf("stop after %d: err = %v, want ErrInterrupted saying how to resume", stopAfter, err)
		}
		if _, err := os.Stat(cfg.Checkpoint); err != nil {
			t.Fatalf("stop after %d: no checkpoint: %v", stopAfter, err)
		}
		resumed, err := report.Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if !resumed.Resumed || !strings.Contains(notices.String(), "resuming from checkpoint") {
			t.Fatalf("the resumed run does not say so: resumed=%v notices=%q", resumed.Resumed, notices.String())
		}
		if _, err := os.Stat(cfg.Checkpoint); !os.IsNotExist(err) {
			t.Fatalf("a completed run left its checkpoint: %v", err)
		}
		// The same scan uninterrupted; it draws its own HMAC secret, so
		// sameCounts compares the records but not their hashes.
		cfg.Notices = nil
		whole := run(t, cfg)
		if whole.Resumed {
			t.Fatal("a run without a checkpoint file claims to resume")
		}
		sameCounts(t, resumed, whole)
		if resumed.Primary.Requests.Get < whole.Primary.Requests.Get {
			t.Errorf("the resumed runs together made fewer requests (%d) than one run (%d)",
				resumed.Primary.Requests.Get, whole.Primary.Requests.Get)
		}
	}
}

// sameCounts compares everything but times, requests and key hashes (a run
// draws its own HMAC secret).
func sameCounts(t *testing.T, got, want *report.Report) {
	t.Helper()
	g, w := *got, *want
	g.Divergences, w.Divergences = nil, nil
	sameResult(t, &g, &w)
	if len(got.Divergences) != len(want.Divergences) {
		t.Fatalf("divergences %d, want %d", len(got.Divergences), len(want.Divergences))
	}
	for i := range got.Divergences {
		a, b := got.Divergences[i], want.Divergences[i]
		if a.Kind != b.Kind || a.Namespace != b.Namespace || a.Primary.Length != b.Primary.Length {
			t.Fatalf("divergence %d: %+v, want %+v", i, a, b)
		}
	}
}

func TestCheckpointResumeKeepsTheHashes(t *testing.T) {
	f, cfg := bigFixture(t)
	if err := f.interrupt(cfg, 10); !errors.Is(err, report.ErrInterrupted) {
		t.Fatal(err)
	}
	var cp struct {
		Secret []byte `json:"secret"`
	}
	raw, err := os.ReadFile(cfg.Checkpoint)
	if err != nil || json.Unmarshal(raw, &cp) != nil || len(cp.Secret) == 0 {
		t.Fatalf("the checkpoint does not keep the drawn secret: %v", err)
	}
	resumed := run(t, cfg)
	cfg.Checkpoint, cfg.Secret = "", cp.Secret
	fresh := run(t, cfg)
	if resumed.Options.StableHashes || !fresh.Options.StableHashes {
		t.Errorf("stable hashes: resumed on a drawn secret %v, run on a configured one %v", resumed.Options.StableHashes, fresh.Options.StableHashes)
	}
	fresh.Options.StableHashes = false // the same secret, drawn the first time
	sameResult(t, resumed, fresh)
}

func TestCheckpointRefusesOtherOptions(t *testing.T) {
	f, cfg := bigFixture(t)
	if err := f.interrupt(cfg, 5); !errors.Is(err, report.ErrInterrupted) {
		t.Fatal(err)
	}
	other := cfg
	other.Scope.ExcludeModules = []string{"beta"}
	if _, err := report.Run(context.Background(), other); !errors.Is(err, report.ErrCheckpoint) {
		t.Fatalf("err = %v, want ErrCheckpoint", err)
	}
	other = cfg
	other.Identity = "other stores"
	if _, err := report.Run(context.Background(), other); !errors.Is(err, report.ErrCheckpoint) {
		t.Fatalf("err = %v, want ErrCheckpoint", err)
	}
	// Tuning is not part of what a run computes.
	tuned := cfg
	tuned.BatchSize, tuned.Concurrency, tuned.ListLimit = 40, 1, 100
	if _, err := report.Run(context.Background(), tuned); err != nil {
		t.Fatalf("a run with other tuning cannot resume: %v", err)
	}

	if err := os.WriteFile(cfg.Checkpoint, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := report.Run(context.Background(), cfg); !errors.Is(err, report.ErrCheckpoint) {
		t.Fatalf("garbage checkpoint: err = %v", err)
	}
}

func TestCheckpointWithARefusedCursor(t *testing.T) {
	f, cfg := bigFixture(t)
	if err := f.interrupt(cfg, 20); !errors.Is(err, report.ErrInterrupted) {
		t.Fatal(err)
	}
	// Forge the primary's cursor as a store that forgot it would see it.
	raw, err := os.ReadFile(cfg.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var cp map[string]any
	if err := json.Unmarshal(raw, &cp); err != nil {
		t.Fatal(err)
	}
	pos := cp["position"].(map[string]any)
	if pos["after"] == nil {
		t.Fatal("the checkpoint holds no position half way")
	}
	pos["cursors"] = []string{"k1.forgotten", pos["cursors"].([]any)[1].(string)}
	raw, _ = json.Marshal(cp)
	if err := os.WriteFile(cfg.Checkpoint, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var notices bytes.Buffer
	cfg.Notices = &notices
	resumed := run(t, cfg)
	if !strings.Contains(notices.String(), "refused the checkpoint's cursor") {
		t.Fatalf("notices = %q", notices.String())
	}
	cfg.Checkpoint, cfg.Notices = "", nil
	sameCounts(t, resumed, run(t, cfg))
}

func TestInterruptWithoutCheckpoint(t *testing.T) {
	f, cfg := bigFixture(t)
	cfg.Checkpoint = ""
	err := f.interrupt(cfg, 3)
	if !errors.Is(err, report.ErrInterrupted) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "starts over") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckpointUnwritable(t *testing.T) {
	_, cfg := bigFixture(t)
	cfg.Checkpoint = filepath.Join(t.TempDir(), "missing-dir", "cp.json")
	_, err := report.Run(context.Background(), cfg)
	if !errors.Is(err, report.ErrCheckpoint) {
		t.Fatalf("err = %v, want ErrCheckpoint", err)
	}
}
