package report_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kvshadow/kvshadow/internal/report/cli"
	"github.com/kvshadow/kvshadow/kv"
)

// The real bot's failed-write queue in Workers KV ("__retry:mongo-failed:
// <key>:<id>", 17 of them in the trial that found it) made shadow-report
// count them missing from MongoDB, and its repair would have created a
// __retry collection. With --exclude-prefix __retry: they, and kvshadow's
// own __kvshadow: keys without any flag, are neither compared, counted as
// divergent, nor repaired; the report says how many it left out.
func TestExcludedPrefixesAreCountedNeverRepaired(t *testing.T) {
	r := newRig(t)
	specs := []spec{{key: kv.ReservedPrefix + "outbox:1", pv: "kvshadow's"}}
	for _, k := range []string{"wordle:a", "wordle:b", "trading:c"} {
		specs = append(specs, spec{key: k, pv: "v", sv: "v"})
		specs = append(specs, spec{key: "__retry:mongo-failed:" + k + ":1", pv: `{"op":"put"}`})
	}
	r.seed(t, specs)
	fix := r.run(t, context.Background(), "--exclude-prefix", "__retry:", "--repair", "--apply")
	tot := fix.report.Totals
	if fix.code != cli.ExitOK || fix.report.Parity != 100 || tot.Divergent != 0 || tot.Compared != 3 || tot.PrimaryKeys != 3 || tot.Excluded != 4 {
		t.Fatalf("exit %d, parity %v, totals %+v\n%s", fix.code, fix.report.Parity, tot, fix.stderr)
	}
	if rep := fix.report.Repair; rep.Puts != 0 || rep.Deletes != 0 || len(fix.report.Divergences) != 0 {
		t.Fatalf("repair %+v, divergences %d", rep, len(fix.report.Divergences))
	}
	for _, m := range fix.report.Modules {
		if m.Module == "__retry" || m.Module == "__kvshadow" {
			t.Fatalf("the report has a module %q", m.Module)
		}
	}
	for _, k := range []string{"__retry:mongo-failed:wordle:a:1", kv.ReservedPrefix + "outbox:1"} {
		if _, err := r.shadow.Get(context.Background(), k); !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("MongoDB Get(%q) after the repair: %v", k, err)
		}
	}
}
