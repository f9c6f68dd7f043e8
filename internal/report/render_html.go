package report

import (
	"cmp"
	_ "embed"
	"html/template"
	"io"
	"slices"
	"strconv"

	"github.com/kvshadow/kvshadow/compare"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlPage is parsed once; html/template escapes every value by context,
// keys included.
var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"group":     group,
	"keys":      keysText,
	"printable": printable,
	"digest":    digest,
}).Parse(htmlSource))

// chartKinds are the kinds the charts draw, in the table's order, errors
// last; a kind no key has is not drawn.
var chartKinds = []compare.Kind{
	compare.MissingInShadow, compare.ExtraInShadow, compare.ValueMismatch, compare.JSONEquivalent,
	compare.TTLMismatch, compare.MetadataMismatch, compare.ExpiredOnOneSide, compare.PrimaryError, compare.ShadowError,
}

// chartModules is how many modules the module chart draws, those with the
// most keys that differ; the table has them all.
const chartModules = 20

// segment is one kind's part of a bar, as a share of the chart's width.
type segment struct {
	Kind  compare.Kind
	Count string
	Width string // CSS percentage
}

// moduleBar is a module's row in the "where" chart: how many of its keys
// differ, split by kind, on one scale for all modules.
type moduleBar struct {
	Module, Label string
	Keys          int64 // compared
	Differ        int64
	Segments      []segment
	Parity        string
	Low           bool
}

// kindBar is a kind's row in the "how many" chart.
type kindBar struct {
	Kind  compare.Kind
	Count int64
	Width string
}

// column is a column of the counts table: the terminal's header, the
// class that sets its importance (what stays at narrow widths).
type column struct {
	Name, Class string
}

// keysText is "1 key", "1,234 keys".
func keysText(n int64) string {
	if n == 1 {
		return "1 key"
	}
	return group(n) + " keys"
}

func width(n, most int64) string {
	if most <= 0 || n <= 0 {
		return "0%"
	}
	w := float64(n) * 100 / float64(most)
	if w < 0.5 {
		w = 0.5 // a non-zero count stays visible
	}
	return strconv.FormatFloat(w, 'f', 2, 64) + "%"
}

// notAgreeing is a module's keys that count against parity.
func notAgreeing(c Counts) int64 { return c.Compared - c.agreeing() }

// moduleChart returns the bars of the modules with keys that differ (the
// most first, at most chartModules, more counts the rest) and the names of
// modules in step (at most twice that, inStepMore counts the rest).
func moduleChart(r *Report) (bars []moduleBar, inStep []string, more, inStepMore int) {
	mods := slices.Clone(r.Modules)
	slices.SortStableFunc(mods, func(a, b ModuleCounts) int {
		return cmp.Compare(notAgreeing(b.Counts), notAgreeing(a.Counts))
	})
	var most int64
	for _, m := range mods {
		most = max(most, notAgreeing(m.Counts)+m.Kinds[compare.ExpiredOnOneSide])
	}
	for _, m := range mods {
		n := notAgreeing(m.Counts)
		drawn := n + m.Kinds[compare.ExpiredOnOneSide]
		if drawn == 0 {
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
		b := moduleBar{
			Module: m.Module, Label: printable(moduleLabel(m.Module)), Keys: m.Compared,
			Differ: n, Parity: percent(m.Parity), Low: m.Parity < r.Options.MinParity,
		}
		for _, k := range chartKinds {
			if c := m.Kinds[k]; c > 0 {
				b.Segments = append(b.Segments, segment{Kind: k, Count: group(c), Width: width(c, most)})
			}
		}
		bars = append(bars, b)
	}
	return bars, inStep, more, inStepMore
}

func kindChart(k KindCounts) []kindBar {
	var most int64
	for _, kind := range chartKinds {
		most = max(most, k[kind])
	}
	var bars []kindBar
	for _, kind := range chartKinds {
		if n := k[kind]; n > 0 {
			bars = append(bars, kindBar{Kind: kind, Count: n, Width: width(n, most)})
		}
	}
	return bars
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
	bars, inStep, more, inStepMore := moduleChart(r)
	binTitle, binNote := binaryLines(r)
	var repair *htmlRepair
	if r.Repair != nil && r.Repair.Applied {
		repair = &htmlRepair{
			Before: percent(r.Totals.Parity), After: percent(r.Repair.ParityAfter),
			Differ: group(notAgreeing(r.Totals)), Compared: group(r.Totals.Compared),
			Remaining: r.Repair.Remaining + r.Repair.Failed + r.Repair.Pending,
			Kinds:     kindChart(r.Repair.After),
		}
	}
	rows := make([][]string, 0, len(r.Modules)+1)
	for _, m := range r.Modules {
		rows = append(rows, countsRow(printable(moduleLabel(m.Module)), m.Counts))
	}
	return htmlPage.Execute(w, struct {
		R                    *Report
		Verdict, Time, Scope string
		RepairLines          []string
		Repair               *htmlRepair
		Modules              []moduleBar
		InStep               []string
		MoreModules          int
		MoreInStep           int
		Kinds                []kindBar
		Columns              []column
		Rows                 [][]string
		Total                []string
		Shown, Listed        int64
		Sides                []SideInfo
		BinaryTitle          string
		BinaryNote           string
	}{
		R: r, Verdict: verdict(r), Time: timeLine(r), Scope: scopeLine(r), RepairLines: repairLines(r),
		Repair: repair, Modules: bars, InStep: inStep, MoreModules: more, MoreInStep: inStepMore, Kinds: kindChart(r.Totals.Kinds),
		Columns: countColumns(), Rows: rows, Total: countsRow("TOTAL", r.Totals),
		Shown: int64(len(r.Divergences)), Listed: int64(len(r.Divergences)) + r.DivergencesOmitted,
		Sides:       []SideInfo{r.Primary, r.Shadow},
		BinaryTitle: binTitle, BinaryNote: binNote,
	})
}

// htmlRepair is the before and after of an applied repair.
type htmlRepair struct {
	Before, After, Differ, Compared string
	Remaining                       int64
	Kinds                           []kindBar
}
