package report

import (
	_ "embed"
	"html/template"
	"io"

	"github.com/kvshadow/kvshadow/compare"
)

//go:embed report.html.tmpl
var htmlSource string

// htmlPage is parsed once; html/template escapes every value by context,
// keys included.
var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"percent":   percent,
	"group":     group,
	"module":    moduleLabel,
	"printable": printable,
	"digest":    digest,
	"errorsOf":  errorsOf,
	"kindCount": func(k KindCounts, kind compare.Kind) int64 { return k[kind] },
}).Parse(htmlSource))

// chartKinds are the non-matching kinds the divergence chart shows, each
// with its bar even at zero, so that every page has the same legend.
var chartKinds = []compare.Kind{
	compare.MissingInShadow, compare.ExtraInShadow, compare.ValueMismatch, compare.JSONEquivalent,
	compare.TTLMismatch, compare.ExpiredOnOneSide, compare.PrimaryError, compare.ShadowError,
}

// Chart geometry, in SVG user units.
const (
	chartWidth = 640
	labelWidth = 170
	valueWidth = 90
	barHeight  = 22
	barGap     = 8
	barArea    = chartWidth - labelWidth - valueWidth
)

type bar struct {
	Label, Value, Class, Module string
	Kind                        compare.Kind
	Y, Width, TextY             int
}

type chart struct {
	Height int
	Bars   []bar
}

func newChart(n int) chart { return chart{Height: max(n, 1)*(barHeight+barGap) + barGap} }

func (c *chart) add(b bar, fraction float64) {
	i := len(c.Bars)
	b.Y = barGap + i*(barHeight+barGap)
	b.TextY = b.Y + barHeight*2/3
	b.Width = int(fraction * barArea)
	if fraction > 0 && b.Width == 0 {
		b.Width = 1 // a non-zero count stays visible
	}
	c.Bars = append(c.Bars, b)
}

func renderHTML(w io.Writer, r *Report) error {
	parityChart := newChart(len(r.Modules))
	for _, m := range r.Modules {
		class := "ok"
		if m.Parity < r.Options.MinParity {
			class = "low"
		}
		parityChart.add(bar{Label: printable(moduleLabel(m.Module)), Module: m.Module, Value: percent(m.Parity), Class: class}, m.Parity/100)
	}
	var most int64
	for _, k := range chartKinds {
		most = max(most, r.Totals.Kinds[k])
	}
	kindChart := newChart(len(chartKinds))
	for _, k := range chartKinds {
		n := r.Totals.Kinds[k]
		var f float64
		if most > 0 {
			f = float64(n) / float64(most)
		}
		kindChart.add(bar{Label: string(k), Kind: k, Value: group(n), Class: "k-" + string(k)}, f)
	}
	return htmlPage.Execute(w, struct {
		R                       *Report
		Verdict, Time, Scope    string
		Repair                  []string
		ParityChart, KindsChart chart
		Kinds                   []compare.Kind
		ChartWidth, LabelWidth  int
		ValueX, BarArea         int
		Shown, Listed           int64
		Sides                   []SideInfo
	}{
		R: r, Verdict: verdict(r), Time: timeLine(r), Scope: scopeLine(r), Repair: repairLines(r),
		ParityChart: parityChart, KindsChart: kindChart, Kinds: scanKinds,
		ChartWidth: chartWidth, LabelWidth: labelWidth, ValueX: chartWidth - valueWidth + 8,
		BarArea: barArea, Shown: int64(len(r.Divergences)),
		Listed: int64(len(r.Divergences)) + r.DivergencesOmitted,
		Sides:  []SideInfo{r.Primary, r.Shadow},
	})
}
