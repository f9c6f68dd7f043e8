package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/internal/report"
)

// stageTimeout bounds reading the stage document and the open overflows
// at start, and recording the run at the end.
const stageTimeout = 15 * time.Second

// stageView is what a run learned, at its start, of the control collections.
type stageView struct {
	db string
	// doc is the stage document (Generation 0: there is none); err says
	// why it could not be read.
	doc control.Document
	err error
	// ledger records the run; overflows are those open at the start.
	ledger    control.Ledger
	overflows []control.Overflow
}

// readStage reads the stage document and the namespace's open overflows
// from the stores' board. It never fails: what it could not read is in err.
func readStage(ctx context.Context, o *options, s *stores) *stageView {
	sv := &stageView{db: o.controlDB}
	cctx, cancel := context.WithTimeout(ctx, stageTimeout)
	defer cancel()
	if sv.doc, sv.err = control.Read(cctx, control.Config{Board: s.backends.Board, Pairing: s.backends.Pairing}); sv.err != nil {
		return sv
	}
	sv.ledger = s.backends.Ledger
	if sv.overflows, sv.err = sv.ledger.OpenOverflows(cctx, o.cfNamespace); sv.err != nil {
		sv.ledger = nil
		return sv
	}
	return sv
}

// decideTruth picks the authoritative side: the stage document's, which
// --authoritative may only contradict with --force-authoritative.
func decideTruth(o *options, sv *stageView) (report.Role, report.Truth, error) {
	given := report.Truth{Source: report.TruthDefault, Reason: "no store was named and there is no stage document to ask: the primary (Workers KV), as before the migration"}
	if o.authSet {
		given = report.Truth{Source: report.TruthFlag, Reason: fmt.Sprintf("--authoritative %s, with no stage document to say otherwise", o.auth)}
	}
	switch {
	case sv == nil: // the demo: no MongoDB
		return o.auth, given, nil
	case errors.Is(sv.err, control.ErrConfig): // another pairing's
		return "", report.Truth{}, usage("%v", sv.err)
	case sv.err != nil:
		if o.cfg.Repair.Enabled && o.cfg.Repair.Apply && !o.authSet {
			return "", report.Truth{}, fmt.Errorf("the stage document in database %s cannot be read (%v), so the report cannot tell which store is authoritative, and a repair writes the other: say it with --authoritative primary|shadow", sv.db, sv.err)
		}
		given.Reason = fmt.Sprintf("the stage document in database %s cannot be read (%v): %s", sv.db, sv.err, o.auth)
		return o.auth, given, nil
	case sv.doc.Generation == 0:
		given.Reason = fmt.Sprintf("database %s holds no stage document (no kvshadow-proxy has run a stage there): the primary (Workers KV), as before the migration", sv.db)
		if o.authSet {
			given.Reason = fmt.Sprintf("--authoritative %s; database %s holds no stage document to say otherwise", o.auth, sv.db)
		}
		return o.auth, given, nil
	}
	want, store := report.Primary, "Workers KV"
	if sv.doc.Stage.ShadowAuthoritative() {
		want, store = report.Shadow, "MongoDB"
	}
	says := fmt.Sprintf("the stage document says %s (generation %d), where %s is authoritative", sv.doc.Stage, sv.doc.Generation, store)
	t := report.Truth{Source: report.TruthStage, Stage: sv.doc.Stage.String(), Generation: sv.doc.Generation, Reason: says}
	switch {
	case !o.authSet:
		return want, t, nil
	case o.auth == want:
		t.Reason += "; --authoritative agrees"
		return want, t, nil
	case !o.forceAuth:
		return "", report.Truth{}, usage("--authoritative %s disagrees with the stage: %s. A repair that way would copy the store the bot no longer trusts over the one it reads. Leave --authoritative out, or add --force-authoritative if that is what you mean", o.auth, says)
	}
	t.Source = report.TruthForced
	t.Reason = fmt.Sprintf("--force-authoritative %s, against the stage: %s", o.auth, says)
	return o.auth, t, nil
}

// fullRun reports whether a run compares every key of the namespace, from
// its own start: only such a run is recorded, since only it can show an
// overflowed settle set reconciled. A resumed run started before the
// overflows read now.
func fullRun(o *options, r *report.Report) bool {
	s := o.cfg.Scope
	return !r.Resumed && len(s.Keys) == 0 && len(s.Modules) == 0 && len(s.ExcludeModules) == 0 &&
		len(s.Prefixes) == 0 && len(s.ExcludePrefixes) == 0 && s.SampleRate == 1
}

// record writes a full run in the Ledger and says so; a failure is said,
// not returned: the report itself stands.
func record(ctx context.Context, o *options, sv *stageView, r *report.Report, stderr io.Writer) {
	if sv == nil || sv.ledger == nil || !fullRun(o, r) {
		return
	}
	run := control.ReportRun{
		ID: r.RunID, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Account: o.cfAccount, Namespace: o.cfNamespace, Database: o.mongoDB,
		Parity: r.Parity, MinParity: r.Options.MinParity, Passed: r.Passed, Verdict: report.Verdict(r), Truth: string(r.Truth.Side),
		Generation: sv.doc.Generation,
	}
	for _, ov := range sv.overflows {
		run.Overflows = append(run.Overflows, control.SeenOverflow{ID: ov.ID, Growth: ov.Growth})
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	if err := sv.ledger.RecordReport(cctx, run); err != nil {
		fmt.Fprintf(stderr, "shadow-report: warning: the run could not be recorded in database %s (%v); kvshadow-proxy cannot clear an overflow with it\n", sv.db, err)
		return
	}
	fmt.Fprintf(stderr, "shadow-report: recorded run %s in %s.%s\n", run.ID, sv.db, control.ReportsCollection)
}
