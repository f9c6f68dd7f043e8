package report

import (
	"cmp"
	_ "embed"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kvshadow/kvshadow/compare"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlPage is parsed once; html/template escapes every value by context,
// keys included.
var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"group":     group,
	"keys":      func(n int64) string { return plural(n, "key") },
	"printable": printable,
	"digest":    digest,
}).Parse(htmlSource))

// chartKinds are the kinds the charts draw: the table's but match, errors
// last; a kind no key has is not drawn.
var chartKinds = append(slices.Clone(scanKinds[1:]), compare.PrimaryError, compare.ShadowError)

// chartModules is how many modules the module chart draws, those with the
// most keys that differ; the table has them all.
const chartModules = 20

// segment is one kind's part of a bar, as a share of the chart's width.
type segment struct {
	Kind  compare.Kind
	Count string
	Width string // CSS percentage
}

// moduleBar is a module's row in the "where" chart: the share of its keys
// that differ, split by kind, on the chart's axis.
type moduleBar struct {
	Module, Label string
	Keys          int64 // compared
	Differ        int64
	Share         string // of the module's keys
	Segments      []segment
	Parity        string
	Low           bool
}

// kindBar is a kind's row in the "how many" chart.
type kindBar struct {
	Kind  compare.Kind
	Count int64
	Share string // of the keys compared
	Width string
}

// axis is a chart's scale: bars are shares of keys, drawn from 0 to Top,
// with the ticks printed under them, so that one key in 35 never looks
// like all of them.
type axis struct {
	Top     float64
	Caption string
	Ticks   []tick
}

// tick is one printed mark of an axis.
type tick struct {
	Label, Left string
}

// axisTops are the ends an axis may take: the smallest that holds the
// largest share, so that small shares stay readable and the end is printed.
var axisTops = []float64{0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1}

func newAxis(largest float64, caption string) axis {
	top := 1.0
	for _, t := range axisTops {
		if largest <= t {
			top = t
			break
		}
	}
	a := axis{Top: top, Caption: caption}
	for _, f := range []float64{0, 0.5, 1} {
		a.Ticks = append(a.Ticks, tick{Label: sharePercent(top * f), Left: strconv.FormatFloat(f*100, 'f', -1, 64) + "%"})
	}
	return a
}

// sharePercent prints a share of 1 as a short percentage: "2.5%", "100%",
// "0.03%".
func sharePercent(f float64) string {
	p := f * 100
	switch {
	case p == 0:
		return "0%"
	case p < 0.1:
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	case p < 10:
		return strings.TrimSuffix(strconv.FormatFloat(p, 'f', 1, 64), ".0") + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

func share(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// width is a share's place on an axis as a CSS width; a non-zero share
// stays visible.
func width(s float64, a axis) string {
	if s <= 0 || a.Top <= 0 {
		return "0%"
	}
	w := min(s/a.Top*100, 100)
	if w < 0.5 {
		w = 0.5
	}
	return strconv.FormatFloat(w, 'f', 2, 64) + "%"
}

// legendEntry is one kind in a chart's legend: its colour, what it means
// and what to do.
type legendEntry struct {
	Kind compare.Kind
	compare.Explanation
}

// legend lists the kinds the charts draw, in their order, explained.
func legend(k KindCounts, a compare.Authority) []legendEntry {
	var out []legendEntry
	for _, kind := range chartKinds {
		if k[kind] > 0 {
			out = append(out, legendEntry{Kind: kind, Explanation: compare.Explain(kind, a)})
		}
	}
	return out
}

// column is a column of the counts table: the terminal's header, the
// class that sets its importance (what stays at narrow widths).
type column struct {
	Name, Class string
}

// notAgreeing is a module's keys that count against parity.
func notAgreeing(c Counts) int64 { return c.Compared - c.agreeing() }

// moduleChart returns the bars of the modules with keys that differ (the
// most first, at most chartModules, more counts the rest), each the share
// of the module's own keys on an axis from 0 to 100%, and the names of modules in step
// (at most twice that, inStepMore counts the rest).
func moduleChart(r *Report) (bars []moduleBar, ax axis, inStep []string, more, inStepMore int) {
	mods := slices.Clone(r.Modules)
	drawn := func(m ModuleCounts) int64 { return notAgreeing(m.Counts) + m.Kinds[compare.ExpiredOnOneSide] }
	slices.SortStableFunc(mods, func(a, b ModuleCounts) int {
		return cmp.Compare(share(drawn(b), b.Compared), share(drawn(a), a.Compared))
	})
	// The axis always ends at 100%: a bar is how much of its module
	// differs, read at a glance; the kinds chart zooms, this one does not.
	ax = newAxis(1, "share of each module's keys compared")
	for _, m := range mods {
		if drawn(m) == 0 {
			if len(inStep) < chartModules*2 {
				inStep = append(inStep, printable(moduleLabel(m.Module)))
			} else {
				inStepMore++
			}
			continue
		}
		if len(bars) == chartModules {
			more++
			continue
		}
		n := notAgreeing(m.Counts)
		b := moduleBar{
			Module: m.Module, Label: printable(moduleLabel(m.Module)), Keys: m.Compared,
			Differ: n, Share: sharePercent(share(n, m.Compared)), Parity: Percent(m.Parity), Low: m.Parity < r.Options.MinParity,
		}
		for _, k := range chartKinds {
			if c := m.Kinds[k]; c > 0 {
				b.Segments = append(b.Segments, segment{Kind: k, Count: group(c), Width: width(share(c, m.Compared), ax)})
			}
		}
		bars = append(bars, b)
	}
	return bars, ax, inStep, more, inStepMore
}

// kindChart draws each kind as its share of the compared keys, on an axis
// that ends at the smallest of axisTops that holds the largest, printed.
func kindChart(k KindCounts, compared int64) ([]kindBar, axis) {
	var largest float64
	for _, kind := range chartKinds {
		largest = max(largest, share(k[kind], compared))
	}
	ax := newAxis(largest, "share of the "+plural(compared, "key")+" compared")
	var bars []kindBar
	for _, kind := range chartKinds {
		if n := k[kind]; n > 0 {
			bars = append(bars, kindBar{Kind: kind, Count: n, Share: sharePercent(share(n, compared)), Width: width(share(n, compared), ax)})
		}
	}
	return bars, ax
}

// countColumns are the counts table's columns, named as the terminal's;
// "main" columns stay at every width, "aux" ones leave narrow screens.
func countColumns() []column {
	cols := make([]column, len(tableHeader))
	for i, h := range tableHeader {
		cols[i] = column{Name: h, Class: "aux"}
		switch h {
		case "MODULE", "COMPARED", "EXPIRED", "ERRORS", "PARITY":
			cols[i].Class = "main"
		}
	}
	cols[0].Class += " text"
	cols[len(cols)-1].Class += " parity"
	return cols
}

func renderHTML(w io.Writer, r *Report) error {
	bars, modAxis, inStep, more, inStepMore := moduleChart(r)
	kinds, kindAxis := kindChart(r.Totals.Kinds, r.Totals.Compared)
	var repair *htmlRepair
	if r.Repair != nil && r.Repair.Applied {
		repair = &htmlRepair{
			Before: Percent(r.Totals.Parity), After: Percent(r.Repair.ParityAfter),
			Differ: group(notAgreeing(r.Totals)), Compared: group(r.Totals.Compared),
			Remaining: r.Repair.Remaining + r.Repair.Failed + r.Repair.Pending,
		}
		repair.Kinds, repair.Axis = kindChart(r.Repair.After, r.Totals.Compared)
	}
	rows := countsRows(r)
	for i, row := range rows {
		rows[i] = escaped(row, printable)
	}
	return htmlPage.Execute(w, struct {
		R                    *Report
		Verdict, Time, Scope string
		Truth                string
		RepairLines          []string
		Repair               *htmlRepair
		Modules              []moduleBar
		ModuleAxis           axis
		InStep               []string
		MoreModules          int
		MoreInStep           int
		Kinds                []kindBar
		KindAxis             axis
		Legend               []legendEntry
		Columns              []column
		Rows                 [][]string
		Total                []string
		Shown, Listed        int64
		Sides                []SideInfo
		CallOuts             []callOut
	}{
		R: r, Verdict: Verdict(r), Time: timeLine(r), Scope: scopeLine(r), Truth: truthLine(r), RepairLines: append(repairLines(r), settleLines(r)...),
		Repair: repair, Modules: bars, ModuleAxis: modAxis, InStep: inStep, MoreModules: more, MoreInStep: inStepMore,
		Kinds: kinds, KindAxis: kindAxis, Legend: legend(r.Totals.Kinds, r.authority()),
		Columns: countColumns(), Rows: rows[:len(rows)-1], Total: rows[len(rows)-1],
		Shown: int64(len(r.Divergences)), Listed: int64(len(r.Divergences)) + r.DivergencesOmitted,
		Sides:    []SideInfo{r.Primary, r.Shadow},
		CallOuts: callOuts(r),
	})
}

// htmlRepair is the before and after of an applied repair.
type htmlRepair struct {
	Before, After, Differ, Compared string
	Remaining                       int64
	Kinds                           []kindBar
	Axis                            axis
}
