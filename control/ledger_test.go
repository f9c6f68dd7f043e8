package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/control/ledgertest"
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

func TestMemoryBoardSwaps(t *testing.T) { ledgertest.Swaps(t, control.NewMemoryBoard(), 8, 20) }

func TestMemoryBoardSetStages(t *testing.T) { ledgertest.SetStages(t, control.NewMemoryBoard(), 6, 20) }
