package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/control/ledgertest"
	"github.com/kvshadow/kvshadow/dualwrite"
)

func TestCheckClears(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	o := control.Overflow{ID: "ov1", Instance: "i", Namespace: "ns", RaisedAt: at, Growth: 2}
	good := control.ReportRun{ID: "r1", StartedAt: at.Add(time.Minute), FinishedAt: at.Add(2 * time.Minute), Namespace: "ns", Database: "db",
		Parity: 100, MinParity: 100, Passed: true, Overflows: []control.SeenOverflow{{ID: "ov1", Growth: 2}}}
	if err := control.CheckClears(good, o, "ns", "db"); err != nil {
		t.Fatalf("a full passing run that saw the overflow: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(*control.ReportRun, *control.Overflow)
		want string
	}{
		"other namespace":  {func(r *control.ReportRun, _ *control.Overflow) { r.Namespace = "other" }, "not namespace ns"},
		"other database":   {func(r *control.ReportRun, _ *control.Overflow) { r.Database = "other" }, "not namespace ns with database db"},
		"unfinished":       {func(r *control.ReportRun, _ *control.Overflow) { r.FinishedAt = time.Time{} }, "has not finished"},
		"failed":           {func(r *control.ReportRun, _ *control.Overflow) { r.Passed, r.Parity = false, 99.5 }, "did not pass at 100%"},
		"a lower gate":     {func(r *control.ReportRun, _ *control.Overflow) { r.MinParity = 99 }, "did not pass at 100%"},
		"before the raise": {func(r *control.ReportRun, _ *control.Overflow) { r.Overflows = nil }, "started before overflow ov1 was recorded"},
		"before a growth":  {func(_ *control.ReportRun, o *control.Overflow) { o.Growth = 3 }, "started before overflow ov1 last grew"},
		"cleared already":  {func(_ *control.ReportRun, o *control.Overflow) { o.ClearedBy = "r0" }, "cleared already, by report r0"},
	} {
		r, ov := good, o
		r.Overflows = append([]control.SeenOverflow(nil), good.Overflows...)
		c.edit(&r, &ov)
		err := control.CheckClears(r, ov, "ns", "db")
		if !errors.Is(err, control.ErrNotReconciled) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestMemoryLedger(t *testing.T) {
	ctx := context.Background()
	l := control.NewMemoryLedger()
	if _, err := l.Report(ctx, "none"); !errors.Is(err, control.ErrNoRecord) {
		t.Fatalf("unknown report: %v", err)
	}
	run := control.ReportRun{ID: control.NewID(), Namespace: "ns"}
	if err := l.RecordReport(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordReport(ctx, run); !errors.Is(err, control.ErrConflict) {
		t.Fatalf("a second record of one ID: %v", err)
	}
	a := control.Overflow{ID: "a", Instance: "i", Namespace: "ns"}
	b := control.Overflow{ID: "b", Instance: "j", Namespace: "ns"}
	for _, o := range []control.Overflow{a, b} {
		if err := l.SaveOverflow(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	a.ClearedBy = run.ID
	if err := l.SaveOverflow(ctx, a); err != nil {
		t.Fatal(err)
	}
	open, err := l.OpenOverflows(ctx, "ns")
	if err != nil || len(open) != 1 || open[0].ID != "b" {
		t.Fatalf("open overflows %+v, %v", open, err)
	}
	last, ok, err := l.LastOverflow(ctx, "i", "ns")
	if err != nil || !ok || last.ClearedBy != run.ID {
		t.Fatalf("last overflow of i: %+v %v %v", last, ok, err)
	}
}

// The memory ledger lists a namespace's conflicts newest first, up to a
// limit, with how many it keeps, refuses an ID twice, and keeps the latest
// MaxConflictRecords of a namespace.
func TestMemoryLedgerConflicts(t *testing.T) {
	ctx := context.Background()
	l := control.NewMemoryLedger()
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rec := func(i int, ns string) control.ConflictRecord {
		c := control.ConflictRecord{ID: control.NewID(), Instance: "a", KVNamespace: ns}
		c.Namespace, c.Key, c.Outcome, c.Received = "wordle", "wordle:#ab", dualwrite.LateConflict, at.Add(time.Duration(i)*time.Second)
		return c
	}
	first := rec(0, "wordle")
	for _, c := range []control.ConflictRecord{first, rec(1, "other"), rec(2, "wordle")} {
		if err := l.RecordConflict(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RecordConflict(ctx, first); !errors.Is(err, control.ErrConflict) {
		t.Fatalf("an ID twice: %v", err)
	}
	got, total, err := l.Conflicts(ctx, "wordle", 1)
	if err != nil || total != 2 || len(got) != 1 || !got[0].Received.Equal(at.Add(2*time.Second)) {
		t.Fatalf("Conflicts(wordle, 1) = %+v, %d, %v", got, total, err)
	}
	for i := range control.MaxConflictRecords {
		if err := l.RecordConflict(ctx, rec(3+i, "wordle")); err != nil {
			t.Fatal(err)
		}
	}
	got, total, err = l.Conflicts(ctx, "wordle", control.MaxConflictRecords+5)
	if err != nil || total != control.MaxConflictRecords || len(got) != control.MaxConflictRecords || got[len(got)-1].ID == first.ID {
		t.Fatalf("past the limit: %d listed, %d kept, %v", len(got), total, err)
	}
	if _, total, _ := l.Conflicts(ctx, "other", 10); total != 1 {
		t.Fatalf("another namespace lost records to wordle's limit: %d", total)
	}
}

func TestMemoryLedgerDecisions(t *testing.T) { ledgertest.Decisions(t, control.NewMemoryLedger()) }

func TestMemoryBoardSwaps(t *testing.T) { ledgertest.Swaps(t, control.NewMemoryBoard(), 8, 20) }

func TestMemoryBoardSetStages(t *testing.T) { ledgertest.SetStages(t, control.NewMemoryBoard(), 6, 20) }
