package report_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
)

// Every kind is explained, in one line with what to do, in the same words
// in every format (compare.Explain) and the runbook's table, so that the
// reader of any format finds the same advice.
func TestKindsExplainedAlike(t *testing.T) {
	runbook, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range compare.Kinds {
		e := compare.Explain(k)
		if e.Meaning == "" || e.Action == "" || strings.Contains(e.Meaning, "does not know") {
			t.Errorf("%s is not explained: %+v", k, e)
			continue
		}
		if want := fmt.Sprintf("| `%s` | %s | %s |", k, e.Meaning, e.Action); !bytes.Contains(runbook, []byte(want)) {
			t.Errorf("docs/runbook.md's table does not explain %s as %q", k, want)
		}
	}
}

// One key that differs among 35 is a sliver of its module, not a full
// bar: bars are shares of the module's keys, on an axis whose end is
// printed; each colour drawn is in the legend, with what to do; the table
// explains the kinds it found.
func TestHTMLScaleAndLegend(t *testing.T) {
	kinds := report.KindCounts{compare.Match: 34, compare.ValueMismatch: 1}
	r := &report.Report{
		Options: report.Options{MinParity: 100, KeyPolicy: compare.KeyHMAC},
		Modules: []report.ModuleCounts{{Module: "wordle", Counts: report.Counts{Compared: 35, Kinds: kinds, Parity: 97.14}}},
		Totals:  report.Counts{Compared: 35, Kinds: kinds, Parity: 97.14},
	}
	var b bytes.Buffer
	if err := report.Render(&b, r, report.FormatHTML); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	where := section(t, page, `id="modules-chart"`)
	// 1/35 = 2.86% of the module, on an axis to 100%.
	if !strings.Contains(where, `style="width: 2.86%"`) || !strings.Contains(where, `<span style="left: 100%">100%</span>`) {
		t.Errorf("one key of 35 is not drawn as 2.9%% on an axis to 100%%:\n%s", where)
	}
	// The kinds chart zooms to the largest share, and prints its end:
	// 2.86% of all keys on an axis to 5%.
	howMany := section(t, page, `id="kinds-chart"`)
	if !strings.Contains(howMany, `style="width: 57.14%"`) || !strings.Contains(howMany, `<span style="left: 100%">5%</span>`) {
		t.Errorf("the kinds chart is not on an axis to 5%%:\n%s", howMany)
	}
	if !strings.Contains(where, "1 differs (2.9%)") {
		t.Errorf("the bar does not say the share:\n%s", where)
	}
	legend := section(t, page, `id="legend"`)
	e := compare.Explain(compare.ValueMismatch)
	if !strings.Contains(legend, `<span class="swatch k-value_mismatch"></span>value_mismatch`) || !strings.Contains(legend, e.Action) {
		t.Errorf("the legend does not show value_mismatch's colour and what to do:\n%s", legend)
	}
	if strings.Contains(legend, "missing_in_shadow") {
		t.Errorf("the legend lists a kind no key has:\n%s", legend)
	}
	if !strings.Contains(page, "keyed by a secret drawn for this run: set KVSHADOW_KEY_SECRET") {
		t.Errorf("the page does not say the hashes change from run to run")
	}
	b.Reset()
	if err := report.Render(&b, r, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if want := "value_mismatch: " + e.Meaning + ". Do: " + e.Action + "."; !strings.Contains(b.String(), want) {
		t.Errorf("the table does not explain value_mismatch:\n%s", b.String())
	}
}
