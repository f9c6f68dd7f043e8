package report_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/report/cli"
)

// board is the control collections of the rig's database, where
// kvshadow-proxy keeps the stage document.
func (r *rig) board(t *testing.T) *control.MongoBoard {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return control.NewMongoBoard(client.Database(r.env["MONGODB_DB"]))
}

// setStage writes the stage document as kvshadow-proxy would.
func setStage(t *testing.T, b *control.MongoBoard, stage dualwrite.Stage) {
	t.Helper()
	ctx := context.Background()
	doc, err := b.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := control.Document{Stage: stage, Generation: doc.Generation + 1, UpdatedAt: time.Now(), UpdatedBy: "test"}
	if err := b.Swap(ctx, doc.Generation, next); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) values(t *testing.T, key string) (primary, shadow string) {
	t.Helper()
	ctx := context.Background()
	p, err := r.primary.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.shadow.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(p), string(s)
}

// TestRepairFollowsTheStage: in live, MongoDB is what the bot reads, so a
// repair copies it over Workers KV by default; --authoritative primary is
// refused unless forced, and writes nothing; the report says which store
// it took as the truth and why; without a stage document the primary
// stays the default.
func TestRepairFollowsTheStage(t *testing.T) {
	r := newRig(t)
	b := r.board(t)
	ctx := context.Background()
	r.seed(t, []spec{{key: "wordle:a", pv: "stale in Workers KV", sv: "what the bot wrote in live"}, {key: "wordle:b", pv: "same", sv: "same"}})

	res := r.run(t, ctx, "--repair")
	if res.code != cli.ExitBelowParity || res.report.Truth.Side != report.Primary || res.report.Truth.Source != report.TruthDefault ||
		!strings.Contains(res.report.Truth.Reason, "no stage document") {
		t.Fatalf("no stage document: exit %d, truth %+v\n%s", res.code, res.report.Truth, res.stderr)
	}

	setStage(t, b, dualwrite.DualWrite)
	setStage(t, b, dualwrite.Shadow)
	setStage(t, b, dualwrite.Handover)
	setStage(t, b, dualwrite.Live)

	res = r.run(t, ctx, "--repair", "--apply", "--authoritative", "primary")
	if res.code != cli.ExitError || res.report != nil || !strings.Contains(res.stderr, "--authoritative primary disagrees with the stage: the stage document says live (generation 4), where MongoDB is authoritative") ||
		!strings.Contains(res.stderr, "--force-authoritative") {
		t.Fatalf("a contrary --authoritative: exit %d\n%s", res.code, res.stderr)
	}
	if p, s := r.values(t, "wordle:a"); p != "stale in Workers KV" || s != "what the bot wrote in live" {
		t.Fatalf("the refused run wrote: primary %q, shadow %q", p, s)
	}

	res = r.run(t, ctx, "--repair", "--authoritative", "primary", "--force-authoritative")
	if res.code != cli.ExitBelowParity || res.report.Truth.Side != report.Primary || res.report.Truth.Source != report.TruthForced ||
		res.report.Repair.Authoritative != report.Primary {
		t.Fatalf("forced: exit %d, truth %+v\n%s", res.code, res.report.Truth, res.stderr)
	}

	res = r.run(t, ctx, "--repair", "--apply")
	if res.code != cli.ExitOK || res.report.Truth.Side != report.Shadow || res.report.Truth.Source != report.TruthStage ||
		res.report.Truth.Stage != "live" || res.report.Truth.Generation != 4 || res.report.Repair.Authoritative != report.Shadow {
		t.Fatalf("in live by default: exit %d, truth %+v\n%s", res.code, res.report.Truth, res.stderr)
	}
	if p, s := r.values(t, "wordle:a"); p != "what the bot wrote in live" || s != p {
		t.Fatalf("after the repair in live: primary %q, shadow %q", p, s)
	}
	if !strings.Contains(res.stderr, "the truth is the shadow: the stage document says live (generation 4), where MongoDB is authoritative") {
		t.Fatalf("stderr does not say the truth: %s", res.stderr)
	}
	// Every format says it.
	for _, f := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		var out strings.Builder
		if err := report.Render(&out, res.report, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "where MongoDB is authoritative") {
			t.Errorf("%s does not say which store was the truth", f)
		}
	}

	// In handover Workers KV is still authoritative, and --authoritative
	// shadow is the contrary one.
	setStage(t, b, dualwrite.Handover)
	res = r.run(t, ctx, "--authoritative", "shadow")
	if res.code != cli.ExitError || !strings.Contains(res.stderr, "says handover (generation 5), where Workers KV is authoritative") {
		t.Fatalf("handover, --authoritative shadow: exit %d\n%s", res.code, res.stderr)
	}
	if res = r.run(t, ctx, "--authoritative", "primary"); res.code != cli.ExitOK || !strings.Contains(res.report.Truth.Reason, "--authoritative agrees") {
		t.Fatalf("handover, --authoritative primary: exit %d, truth %+v", res.code, res.report.Truth)
	}
}

// TestFullRunsAreRecorded: a full run is recorded beside the stage
// document, with what it saw at its start; a run over part of the keys is
// not.
func TestFullRunsAreRecorded(t *testing.T) {
	r := newRig(t)
	b := r.board(t)
	ctx := context.Background()
	r.seed(t, []spec{{key: "wordle:a", pv: "v", sv: "v"}})
	open := control.Overflow{ID: control.NewID(), Instance: "proxy-0", Namespace: namespace, RaisedAt: time.Now(), Growth: 3}
	if err := b.SaveOverflow(ctx, open); err != nil {
		t.Fatal(err)
	}
	res := r.run(t, ctx)
	if res.code != cli.ExitOK || res.report.RunID == "" || !strings.Contains(res.stderr, "recorded run "+res.report.RunID) {
		t.Fatalf("exit %d, run %q\n%s", res.code, res.report.RunID, res.stderr)
	}
	run, err := b.Report(ctx, res.report.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Namespace != namespace || run.Database != r.env["MONGODB_DB"] || !run.Passed || run.Parity != 100 || run.MinParity != 100 ||
		len(run.Overflows) != 1 || run.Overflows[0] != (control.SeenOverflow{ID: open.ID, Growth: 3}) || !run.StartedAt.Equal(res.report.StartedAt.Truncate(time.Millisecond)) {
		t.Fatalf("recorded %+v", run)
	}
	if err := control.CheckClears(run, open, namespace, r.env["MONGODB_DB"]); err != nil {
		t.Fatalf("the run cannot clear the overflow it saw: %v", err)
	}
	part := r.run(t, ctx, "--module", "wordle")
	if part.code != cli.ExitOK || strings.Contains(part.stderr, "recorded run") {
		t.Fatalf("a run of one module: exit %d\n%s", part.code, part.stderr)
	}
	if _, err := b.Report(ctx, part.report.RunID); err == nil {
		t.Fatal("a run of one module was recorded")
	}
}
