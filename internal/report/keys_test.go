package report_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
)

// A key-list run compares exactly the listed keys that the scope reaches,
// lists nothing, counts each side by what it holds, and repairs only them.
func TestKeyListComparesAndRepairsOnlyThoseKeys(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Scope = report.Scope{
		Keys: []string{"wordle:d", "loldle-emoji:b", "wordle:a", "wordle:gone", "wordle:d", "trading:y"},
		// trading:y is listed but out of scope.
		Modules: []string{"wordle", "loldle-emoji"},
	}
	r := run(t, cfg)
	checkCounts(t, r, map[string]report.Counts{
		"wordle":       {PrimaryKeys: 2, ShadowKeys: 2, Compared: 3, Kinds: kinds(compare.Match, 2, compare.ValueMismatch, 1)},
		"loldle-emoji": {PrimaryKeys: 0, ShadowKeys: 1, Compared: 1, Kinds: kinds(compare.ExtraInShadow, 1)},
	})
	if r.Scope.KeyList != 5 || r.Primary.Requests.List != 0 || r.Primary.Requests.Get != 1 || r.Shadow.Requests.Get != 1 {
		t.Errorf("key list %d, primary requests %+v, shadow %+v: want 5 keys, no list, one bulk get a side",
			r.Scope.KeyList, r.Primary.Requests, r.Shadow.Requests)
	}
	if j := mustJSON(t, r); strings.Contains(j, "wordle:gone") || !strings.Contains(j, `"key_list":5`) {
		t.Errorf("the JSON must give the list's size, never its keys unless they diverge:\n%s", j)
	}
	var table strings.Builder
	if err := report.Render(&table, r, report.FormatTable); err != nil || !strings.Contains(table.String(), "a list of 5 keys, not a full scan") {
		t.Errorf("the table must say it is a key list (%v):\n%s", err, table.String())
	}

	cfg.Repair = report.Repair{Enabled: true, Apply: true}
	if r := run(t, cfg); r.Repair == nil || r.Repair.Puts != 1 || r.Repair.Deletes != 1 || r.Repair.ParityAfter != 100 {
		t.Fatalf("repair of the list: %+v", r.Repair)
	}
	// The divergences outside the list are untouched.
	cfg.Scope, cfg.Repair = report.Scope{}, report.Repair{}
	full := run(t, cfg)
	if got := full.Totals.Divergent; got != 5 {
		t.Errorf("a full scan after the list's repair finds %d divergences, want the 5 outside the list", got)
	}
}

func TestKeyListValidationAndCheckpoint(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	for _, keys := range [][]string{{"wordle:a", ""}, {"."}, {"\xff"}, {strings.Repeat("k", 513)}} {
		cfg.Scope = report.Scope{Keys: keys}
		if _, err := report.Run(context.Background(), cfg); !errors.Is(err, report.ErrConfig) {
			t.Errorf("keys %q: err = %v, want ErrConfig", keys, err)
		}
	}
	if f.primary.requests()+f.shadow.requests() != 0 {
		t.Error("I/O before a config error")
	}

	// A checkpoint belongs to its list: another list refuses it.
	path := filepath.Join(t.TempDir(), "keys.ckpt")
	cfg.Scope = report.Scope{Keys: []string{"wordle:a", "wordle:b", "wordle:c", "wordle:d"}}
	cfg.BatchSize, cfg.Concurrency, cfg.Checkpoint = 1, 1, path
	if err := f.interrupt(cfg, 2); !errors.Is(err, report.ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	other := cfg
	other.Scope = report.Scope{Keys: []string{"wordle:a", "wordle:b"}}
	if _, err := report.Run(context.Background(), other); !errors.Is(err, report.ErrCheckpoint) {
		t.Errorf("another list resumed the checkpoint: %v", err)
	}
	resumed := run(t, cfg)
	cfg.Checkpoint = ""
	sameResult(t, resumed, run(t, cfg))
	if !resumed.Resumed {
		t.Error("the same list did not resume")
	}
}
