package report_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report/cli"
)

// TestKeysFileRepairsOnlyThoseKeys: through the real clients, a key list of
// 30 wordle keys (one batch of 30 a side, no listing at the Workers KV
// server) finds and repairs exactly their divergences and leaves the rest.
func TestKeysFileRepairsOnlyThoseKeys(t *testing.T) {
	r := newRig(t)
	r.seed(t, divergences())
	var lines []string
	for i := range 30 {
		lines = append(lines, fmt.Sprintf("wordle:item:%03d", i))
	}
	list := filepath.Join(t.TempDir(), "dirty.txt")
	if err := os.WriteFile(list, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}

	before := r.kvServer.Requests()
	res := r.run(t, context.Background(), "--keys-file", list)
	rep := res.report
	if res.code != cli.ExitBelowParity || rep == nil || rep.Scope.KeyList != 30 {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
	// Three of each divergent kind among items 0..29 of one module.
	if tot := rep.Totals; tot.Compared != 30 || tot.Divergent != 18 || tot.PrimaryKeys != 27 || tot.ShadowKeys != 24 ||
		tot.Kinds[compare.TTLMismatch] != 6 || tot.Kinds[compare.ExpiredOnOneSide] != 3 {
		t.Errorf("totals %+v", tot)
	}
	// One read of the first key to check the store answers, then one bulk
	// read; no listing.
	if q := rep.Primary.Requests; q.List != 0 || q.Get != 2 || r.kvServer.Requests()-before != q.Total {
		t.Errorf("primary requests %+v, server saw %d", q, r.kvServer.Requests()-before)
	}

	fix := r.run(t, context.Background(), "--keys-file", list, "--repair", "--apply")
	if fix.code != cli.ExitOK || fix.report.Repair.Verified != 18 {
		t.Fatalf("repair: exit %d, %+v\n%s", fix.code, fix.report.Repair, fix.stderr)
	}
	// A full scan still finds the divergences outside the list: 73 less 18.
	if after := r.run(t, context.Background()); after.report.Totals.Divergent != 55 {
		t.Errorf("after the list's repair a full scan finds %d divergences, want 55", after.report.Totals.Divergent)
	}
}
