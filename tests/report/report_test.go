package report_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report/cli"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestScanCountsEveryKind(t *testing.T) {
	r := newRig(t)
	r.seed(t, divergences())
	before := r.kvServer.Requests()
	res := r.run(t, context.Background())
	if res.code != cli.ExitBelowParity || res.report == nil {
		t.Fatalf("exit %d, stderr %s", res.code, res.stderr)
	}
	rep := res.report
	if len(rep.Modules) != 4 {
		t.Fatalf("modules = %+v", rep.Modules)
	}
	checkCounts(t, "(no module)", rep.Modules[0].Counts, wantNoModule)
	for i, m := range modules {
		if rep.Modules[i+1].Module != m {
			t.Fatalf("module %d = %q, want %q", i+1, rep.Modules[i+1].Module, m)
		}
		checkCounts(t, m, rep.Modules[i+1].Counts, wantModule)
	}
	if tot := rep.Totals; tot.Compared != 122 || tot.Divergent != 73 || tot.Parity != 40.1639 || rep.Passed {
		t.Errorf("totals = %+v, passed %v", tot, rep.Passed)
	}
	if len(rep.Divergences) != 85 || rep.DivergencesOmitted != 0 {
		t.Errorf("divergences listed %d (+%d), want 85", len(rep.Divergences), rep.DivergencesOmitted)
	}
	for _, d := range rep.Divergences {
		if !strings.Contains(d.Key, "#") || strings.Contains(d.Key, "item") {
			t.Fatalf("key %q is not redacted by default", d.Key)
		}
	}
	// The report's request count is what the Workers KV server received:
	// the check that both stores answer (one small list), then 122 keys in
	// batches of 100: one list and two bulk gets.
	if got, served := rep.Primary.Requests, r.kvServer.Requests()-before; got.Total != served || got.List != 2 || got.Get != 2 {
		t.Errorf("primary requests %+v, server saw %d", got, served)
	}

	// The gate.
	if res := r.run(t, context.Background(), "--min-parity", "40.1%"); res.code != cli.ExitOK {
		t.Errorf("40.16%% against a 40.1%% gate: exit %d", res.code)
	}
	if res := r.run(t, context.Background(), "--min-parity", "40.2%"); res.code != cli.ExitBelowParity {
		t.Errorf("40.16%% against a 40.2%% gate: exit %d", res.code)
	}
	if res := r.run(t, context.Background(), "--format", "yaml"); res.code != cli.ExitError || !strings.Contains(res.stderr, "--format") {
		t.Errorf("bad flag: exit %d, %s", res.code, res.stderr)
	}

	// Scope: two modules, one excluded prefix, plain keys.
	res = r.run(t, context.Background(), "--module", "trading,wordle", "--exclude-prefix", "wordle:item:00", "--keys", "plain")
	if tot := res.report.Totals; tot.Compared != 70 || len(res.report.Modules) != 2 {
		t.Errorf("scoped totals = %+v", tot)
	}
	for _, d := range res.report.Divergences {
		if !strings.HasPrefix(d.Key, "trading:item:") && !strings.HasPrefix(d.Key, "wordle:item:") || strings.HasPrefix(d.Key, "wordle:item:00") {
			t.Errorf("out of scope: %q", d.Key)
		}
	}
}

func TestCheckpointResume(t *testing.T) {
	r, whole := uninterrupted(t)

	checkpoint := filepath.Join(t.TempDir(), "scan.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.cancelMu.Lock()
	r.cancelAt, r.cancelRun = r.bulkGets.Load()+6, cancel // half way through 13 batches
	r.cancelMu.Unlock()
	// One batch at a time, so that the batches before the cut are
	// committed; the resumed run goes back to the default concurrency,
	// which a checkpoint does not depend on.
	cut := r.run(t, ctx, "--batch", "10", "--checkpoint", checkpoint, "--concurrency", "1")
	if cut.code != cli.ExitError || cut.report != nil || !strings.Contains(cut.stderr, "interrupted") || !strings.Contains(cut.stderr, "resume") {
		t.Fatalf("interrupted run: exit %d, stderr %s", cut.code, cut.stderr)
	}
	if _, err := os.Stat(checkpoint); err != nil {
		t.Fatalf("no checkpoint after the interruption: %v", err)
	}

	resumed := resume(t, r, checkpoint, whole)
	if !strings.Contains(resumed.stderr, ": 50 keys done") {
		t.Errorf("the resumed run does not say how far the first got: %s", resumed.stderr)
	}
	if _, err := os.Stat(checkpoint); !os.IsNotExist(err) {
		t.Errorf("the completed run left its checkpoint: %v", err)
	}
}

// uninterrupted seeds a rig with divergences() and scans it whole, in
// batches of 10: the result an interrupted scan must come back to.
func uninterrupted(t *testing.T) (*rig, result) {
	t.Helper()
	r := newRig(t)
	r.seed(t, divergences())
	whole := r.run(t, context.Background(), "--batch", "10")
	if whole.report == nil {
		t.Fatalf("exit %d: %s", whole.code, whole.stderr)
	}
	return r, whole
}

// resume reruns the scan from checkpoint and expects it to say so and to
// end as the uninterrupted scan did.
func resume(t *testing.T, r *rig, checkpoint string, whole result) result {
	t.Helper()
	resumed := r.run(t, context.Background(), "--batch", "10", "--checkpoint", checkpoint)
	if resumed.report == nil || !resumed.report.Resumed || !strings.Contains(resumed.stderr, "resuming from checkpoint") {
		t.Fatalf("resumed run: exit %d, stderr %s", resumed.code, resumed.stderr)
	}
	if resumed.code != whole.code {
		t.Errorf("exit %d, uninterrupted %d", resumed.code, whole.code)
	}
	if got, want := comparable(t, resumed.report), comparable(t, whole.report); got != want {
		t.Fatalf("the resumed result differs from the uninterrupted one:\n got %s\nwant %s", got, want)
	}
	return resumed
}

func TestRepairThenFullParity(t *testing.T) {
	r := newRig(t)
	r.seed(t, divergences())
	dry := r.run(t, context.Background(), "--repair")
	if rep := dry.report.Repair; dry.code != cli.ExitBelowParity || rep == nil || rep.Applied || rep.Puts != 61 || rep.Deletes != 12 {
		t.Fatalf("dry run: exit %d, repair %+v", dry.code, rep)
	}
	if again := r.run(t, context.Background()); again.report.Totals.Divergent != 73 {
		t.Fatalf("the dry run wrote: %+v", again.report.Totals)
	}

	fix := r.run(t, context.Background(), "--repair", "--apply")
	rep := fix.report.Repair
	if fix.code != cli.ExitOK || !rep.Applied || rep.Puts != 61 || rep.Deletes != 12 || rep.Failed != 0 ||
		rep.Rechecked != 73 || rep.Verified != 73 || rep.Remaining != 0 || rep.ParityAfter != 100 {
		t.Fatalf("repair: exit %d, %+v\n%s", fix.code, rep, fix.stderr)
	}
	// One bulk write and one bulk delete per batch (two batches of 100).
	if q := fix.report.Shadow.Requests; q.Put != 2 || q.Delete != 2 {
		t.Errorf("shadow requests = %+v", q)
	}

	after := r.run(t, context.Background())
	if after.code != cli.ExitOK || after.report.Parity != 100 || after.report.Totals.Divergent != 0 {
		t.Fatalf("after the repair: exit %d, totals %+v", after.code, after.report.Totals)
	}
	// Only the keys about to expire remain told apart, as a clock race.
	if tot := after.report.Totals; tot.Kinds[compare.ExpiredOnOneSide] != 12 || tot.Kinds[compare.Match] != 98 {
		t.Errorf("after the repair: %+v", tot.Kinds)
	}
}

func TestRepairFromTheShadow(t *testing.T) {
	r := newRig(t)
	r.seed(t, divergences())
	fix := r.run(t, context.Background(), "--repair", "--apply", "--authoritative", "shadow")
	// Into Workers KV: the shadow-only and differing keys are put, the 13
	// missing in the shadow deleted; the 12 about to expire are left alone.
	if rep := fix.report.Repair; fix.code != cli.ExitOK || rep.Puts != 60 || rep.Deletes != 13 || rep.Verified != 73 {
		t.Fatalf("exit %d, repair %+v\n%s", fix.code, rep, fix.stderr)
	}
	if q := fix.report.Primary.Requests; q.Put != 2 || q.Delete != 2 || q.Total != fix.report.Primary.Requests.Total {
		t.Errorf("primary requests = %+v", q)
	}
	after := r.run(t, context.Background())
	// 110 keys, less the 13 deleted, plus the 12 put.
	if after.code != cli.ExitOK || after.report.Totals.Divergent != 0 || after.report.Totals.PrimaryKeys != 109 {
		t.Fatalf("after: exit %d, %+v", after.code, after.report.Totals)
	}
}

func TestBackfillIntoAnEmptyShadow(t *testing.T) {
	r := newRig(t)
	var specs []spec
	// 120 keys in one module: more than a MongoDB cursor's first batch
	// (101 documents), which a listing page must not stop at.
	for j, m := range modules {
		for i := range []int{15, 15, 120}[j] {
			s := spec{key: fmt.Sprintf("%s:user:%03d", m, i), pv: fmt.Sprintf(`{"n":%d}`, i)}
			if i%4 == 0 {
				s.pexp = 6 * time.Hour
			}
			specs = append(specs, s)
		}
	}
	r.seed(t, specs)
	fill := r.run(t, context.Background(), "--repair", "--apply")
	if fill.code != cli.ExitOK || fill.report.Totals.ShadowKeys != 0 || fill.report.Totals.Kinds[compare.MissingInShadow] != 150 ||
		fill.report.Repair.Puts != 150 || fill.report.Repair.Verified != 150 {
		t.Fatalf("backfill: exit %d, totals %+v, repair %+v\n%s", fill.code, fill.report.Totals, fill.report.Repair, fill.stderr)
	}
	after := r.run(t, context.Background())
	if tot := after.report.Totals; after.code != cli.ExitOK || tot.ShadowKeys != 150 || tot.Kinds[compare.Match] != 150 {
		t.Fatalf("after the backfill: exit %d, %+v", after.code, tot)
	}
}

// A value that is not valid UTF-8 is stored by the Go backend as BSON
// Binary, which the JavaScript bot reads as an object: the report calls
// the key out, though its bytes match.
func TestBinaryValueIsCalledOut(t *testing.T) {
	r := newRig(t)
	r.seed(t, []spec{
		{key: "wordle:bin", pv: "\xff\xfe\x00", sv: "\xff\xfe\x00"},
		{key: "wordle:text", pv: `{"w":"crâne"}`, sv: `{"w":"crâne"}`},
	})
	client, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.Database(r.shadow.Database()).Collection("wordle").FindOne(context.Background(), bson.D{{Key: "_id", Value: "wordle:bin"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if typ := raw.Lookup("value").Type; typ != bson.TypeBinary {
		t.Fatalf("the shadow holds the value as %s, want Binary (what this test is about)", typ)
	}
	res := r.run(t, context.Background(), "--keys", "plain")
	rep := res.report
	if res.code != cli.ExitOK || rep.Totals.Kinds[compare.Match] != 2 {
		t.Fatalf("exit %d, totals %+v\n%s", res.code, rep.Totals, res.stderr)
	}
	if rep.Totals.BinaryInShadow != 1 || len(rep.BinaryInShadow) != 1 || rep.BinaryInShadow[0].Key != "wordle:bin" {
		t.Errorf("binary in shadow: %d, %+v", rep.Totals.BinaryInShadow, rep.BinaryInShadow)
	}
	if !strings.Contains(res.stderr, "1 value in the shadow not UTF-8 text") {
		t.Errorf("the verdict on stderr does not call it out:\n%s", res.stderr)
	}
}
