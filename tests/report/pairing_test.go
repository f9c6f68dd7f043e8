package report_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report/cli"
)

// TestARunRefusesAStageDocumentOfAnotherPairing: the stage document in
// --control-db (here MONGODB_DB's) governs the namespace with another
// database, in live: a repair run against it would take MongoDB, the
// wrong one, as the truth and delete from Workers KV what it lacks. The
// run refuses (exit 2), naming both pairings, and writes nothing.
func TestARunRefusesAStageDocumentOfAnotherPairing(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.seed(t, []spec{{key: "wordle:a", pv: "only in Workers KV"}})
	other := control.Pairing{Account: account, Namespaces: []control.Namespace{{ID: namespace, Database: "miti99bot"}}}
	if err := r.board(t).Swap(ctx, 0, control.Document{Stage: dualwrite.Live, Generation: 1, UpdatedAt: time.Now(), UpdatedBy: "a proxy", Pairing: other}); err != nil {
		t.Fatal(err)
	}
	res := r.run(t, ctx, "--repair", "--apply")
	want := "the stage document (live at generation 1) governs Workers KV account " + account + ", namespace " + namespace + " (MongoDB database miti99bot), " +
		"and this instance serves Workers KV account " + account + ", namespace " + namespace + " (MongoDB database " + r.env["MONGODB_DB"] + ")"
	if res.code != cli.ExitError || res.report != nil || !strings.Contains(res.stderr, want) {
		t.Fatalf("a run against another pairing's stage document: exit %d, want %d saying %q:\n%s", res.code, cli.ExitError, want, res.stderr)
	}
	if v, err := r.primary.Get(ctx, "wordle:a"); err != nil || string(v) != "only in Workers KV" {
		t.Errorf("Workers KV's wordle:a after the refused run: %q %v", v, err)
	}
}
