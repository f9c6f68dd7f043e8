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
// in every format (compare.Explain) and the runbook's tables (one for each
// store as the truth, and the line after complete), so that the reader of
// any format finds the same advice.
func TestKindsExplainedAlike(t *testing.T) {
	runbook, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []compare.Authority{compare.PrimaryAuthority, compare.ShadowAuthority, compare.ShadowAlone} {
		for _, k := range compare.Kinds {
			e := compare.Explain(k, a)
			if e.Meaning == "" || e.Action == "" || strings.Contains(e.Meaning, "does not know") {
				t.Errorf("%s is not explained: %+v", k, e)
				continue
			}
			want := fmt.Sprintf("| `%s` | %s | %s |", k, e.Meaning, e.Action)
			if a == compare.ShadowAlone {
				want = e.Action
			}
			if !bytes.Contains(runbook, []byte(want)) {
				t.Errorf("docs/runbook.md does not explain %s (authority %d) as %q", k, a, want)
			}
		}
	}
}

// The advice follows the stage: while Workers KV is authoritative a key
// only in MongoDB is deleted from it by a repair; in live and rampdown it
// is copied into Workers KV, and a key only in Workers KV deleted there;
// after complete every difference is expected and the run passes. Every
// stage says what its gate decides.
func TestAdviceInEveryStage(t *testing.T) {
	f := newFixture(t)
	for stage, want := range map[string]struct {
		side    report.Role
		advice  []string
		gate    string
		passed  bool
		verdict string
	}{
		"off":       {report.Primary, []string{"extra_in_shadow: MongoDB has a key Workers KV does not", "repair (deletes it from MongoDB)", "repair (shadow-report --repair --apply copies it)"}, "none yet: MongoDB is not written in off", false, "FAIL"},
		"dualwrite": {report.Primary, []string{"repair (deletes it from MongoDB)"}, "the step to the handover", false, "FAIL"},
		"shadow":    {report.Primary, []string{"repair (deletes it from MongoDB)"}, "the step to the handover", false, "FAIL"},
		"handover":  {report.Primary, []string{"repair (deletes it from MongoDB)"}, "the flip to live", false, "FAIL"},
		"live":      {report.Shadow, []string{"repair (copies it into Workers KV)", "repair (deletes it from Workers KV)", "repair (copies MongoDB's value into Workers KV)"}, "the way back: Workers KV must hold what MongoDB holds before a step back to handover", false, "FAIL"},
		"rampdown":  {report.Shadow, []string{"extra_in_shadow: MongoDB (authoritative) has a key Workers KV does not", "repair (copies it into Workers KV)"}, "the way back: Workers KV must hold what MongoDB holds before a step back to live", false, "FAIL"},
		"complete":  {report.Shadow, []string{"value_mismatch: both stores have the key with different values: a copy to Workers KV was lost, or a writer went around the proxy. Do: nothing: after complete Workers KV is no longer written"}, "none: Workers KV is no longer written", true, "PASS: no gate after complete; parity 46.15%: Workers KV, no longer written, falls behind MongoDB as expected"},
	} {
		cfg := f.config()
		cfg.MinParity = 100
		cfg.Repair.Authoritative = want.side
		cfg.Truth = report.Truth{Source: report.TruthStage, Stage: stage, Generation: 3, Reason: "the stage document says " + stage}
		r := run(t, cfg)
		var b bytes.Buffer
		if err := report.Render(&b, r, report.FormatTable); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, s := range append(want.advice, "the gate: "+want.gate, want.verdict) {
			if !strings.Contains(out, s) {
				t.Errorf("%s: the report does not say %q:\n%s", stage, s, out)
			}
		}
		wrong := "repair (deletes it from MongoDB)"
		if want.side == report.Primary {
			wrong = "Workers KV)"
		}
		if strings.Contains(out, wrong) || r.Passed != want.passed {
			t.Errorf("%s: passed %v (want %v), or advice for the other store as the truth (%q):\n%s", stage, r.Passed, want.passed, wrong, out)
		}
		if stage == "complete" && strings.Count(out, "Do: nothing: after complete") != 5 {
			t.Errorf("complete: not every difference is said to be expected:\n%s", out)
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
	e := compare.Explain(compare.ValueMismatch, compare.PrimaryAuthority)
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
