package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// renderFixture is the fixture plus a key a terminal or a page must not
// receive raw, scanned as each golden case says.
func renderFixture(t *testing.T, edit func(*report.Config)) *report.Report {
	t.Helper()
	f := newFixture(t)
	put(t, f.primary, "wordle:<b>|`x`\x1b[31m", "v", 0)
	// Bytes that are not UTF-8, alike on both sides: a match by bytes
	// that the JavaScript bot could not read from MongoDB.
	put(t, f.primary, "wordle:bin", "\xff\xfe", 0)
	put(t, f.shadow, "wordle:bin", "\xff\xfe", 0)
	cfg := f.config()
	cfg.MinParity = 90
	if edit != nil {
		edit(&cfg)
	}
	return run(t, cfg)
}

var goldenCases = []struct {
	name string
	edit func(*report.Config)
}{
	{"scan", nil},
	{"repair", func(c *report.Config) {
		c.KeyPolicy = compare.KeyHMAC
		c.Repair = report.Repair{Enabled: true, Apply: true}
		c.Scope = report.Scope{ExcludeModules: []string{"trading"}}
	}},
	{"dryrun", func(c *report.Config) {
		c.KeyPolicy = compare.KeyHidden
		c.Repair = report.Repair{Enabled: true, Authoritative: report.Shadow}
		c.Truth = report.Truth{Source: report.TruthStage, Stage: "live", Generation: 7, Reason: "the stage document says live (generation 7), where MongoDB is authoritative"}
		c.MaxRecords = 3
	}},
}

func TestGoldenLayouts(t *testing.T) {
	for _, c := range goldenCases {
		r := renderFixture(t, c.edit)
		for _, format := range []report.Format{report.FormatTable, report.FormatMarkdown} {
			var b bytes.Buffer
			if err := report.Render(&b, r, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.name+"."+string(format)+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", format, path, got)
			}
		}
	}
}

func TestRenderedKeysCannotEscape(t *testing.T) {
	r := renderFixture(t, nil)
	for _, format := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		var b bytes.Buffer
		if err := report.Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "\x1b") || format != report.FormatTable && strings.Contains(out, "<b>") {
			t.Errorf("%s output carries the key raw", format)
		}
	}
}

func TestHTMLIsSelfContainedWithCharts(t *testing.T) {
	for _, c := range goldenCases {
		r := renderFixture(t, c.edit)
		var b bytes.Buffer
		if err := report.Render(&b, r, report.FormatHTML); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		// Where: a row per module with keys that do not agree, on one
		// scale of key counts; the others are named as in step.
		where := section(t, page, `id="modules-chart"`)
		for _, m := range r.Modules {
			row := strings.Contains(where, `<div class="bar-row module" data-module="`+m.Module+`">`)
			if want := m.Parity < 100 || m.Kinds[compare.ExpiredOnOneSide] > 0; row != want {
				t.Errorf("%s: module %q drawn %v, want %v", c.name, m.Module, row, want)
			}
			// Each bar says how many keys its module has, so that a
			// module of one key does not look as heavy as a large one.
			if row {
				bar := where[strings.Index(where, `data-module="`+m.Module+`">`):]
				label := bar[:strings.Index(bar, "</div>")]
				want := fmt.Sprintf(`<span class="sub num">%d keys</span>`, m.Compared)
				if m.Compared == 1 {
					want = `<span class="sub num">1 key</span>`
				}
				if !strings.Contains(label, want) {
					t.Errorf("%s: module %q's bar does not give its %d keys: %s", c.name, m.Module, m.Compared, label)
				}
			}
		}
		// How many: only the kinds some key has, each with its count.
		kinds := section(t, page, `id="kinds-chart"`)
		for _, k := range compare.Kinds {
			drawn := strings.Contains(kinds, `data-kind="`+string(k)+`"`)
			if want := k != compare.Match && r.Totals.Kinds[k] > 0; drawn != want {
				t.Errorf("%s: kinds chart draws %s: %v, want %v (%d keys)", c.name, k, drawn, want, r.Totals.Kinds[k])
			}
		}
		if strings.Contains(page, `style="width: 0%"`) {
			t.Errorf("%s: a zero bar is drawn", c.name)
		}
		// The counts table names its columns as the terminal does.
		if want := "<tr>" + thRow(countHeader) + "</tr>"; !strings.Contains(page, want) {
			t.Errorf("%s: counts header is not the terminal's %v", c.name, countHeader)
		}
		// An applied repair shows before and after, labelled.
		applied := r.Repair != nil && r.Repair.Applied
		for _, label := range []string{"Before the repair (the scan)", "After the repair (re-checked)", "(found by the scan, before the repair)"} {
			if strings.Contains(page, label) != applied {
				t.Errorf("%s: label %q shown %v, repair applied %v", c.name, label, !applied, applied)
			}
		}
		for _, bad := range []*regexp.Regexp{
			regexp.MustCompile(`(?i)https?:`), regexp.MustCompile(`(?i)\s(src|href|xlink:href|action)\s*=`),
			regexp.MustCompile(`(?i)@import|url\(`), regexp.MustCompile(`(?i)<(script|link|img|iframe|object)`),
			regexp.MustCompile(`//[a-z0-9.-]+\.[a-z]`),
		} {
			if loc := bad.FindStringIndex(page); loc != nil {
				t.Errorf("%s: external reference %q", c.name, page[max(loc[0]-40, 0):min(loc[1]+40, len(page))])
			}
		}
	}
}

// countHeader is the terminal table's header.
var countHeader = []string{"MODULE", "PRIMARY", "SHADOW", "COMPARED", "MATCH", "MISSING", "EXTRA", "VALUE", "JSON", "TTL", "META", "EXPIRED", "ERRORS", "PARITY"}

func thRow(names []string) string {
	var b strings.Builder
	for i, n := range names {
		class := "aux"
		switch n {
		case "MODULE", "COMPARED", "EXPIRED", "ERRORS", "PARITY":
			class = "main"
		}
		if i == 0 {
			class += " text"
		}
		if i == len(names)-1 {
			class += " parity"
		}
		b.WriteString(`<th class="` + class + `">` + n + "</th>")
	}
	return b.String()
}

// section returns the element that carries attr, up to the next chart or
// heading.
func section(t *testing.T, page, attr string) string {
	t.Helper()
	i := strings.Index(page, attr)
	if i < 0 {
		t.Fatalf("no element with %s", attr)
	}
	j := strings.Index(page[i:], "<h2")
	if j < 0 {
		j = len(page) - i
	}
	return page[i : i+j]
}

func TestJSONSchema(t *testing.T) {
	r := renderFixture(t, goldenCases[1].edit)
	var b bytes.Buffer
	if err := report.Render(&b, r, report.FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != report.SchemaName || doc["schema_version"] != float64(report.SchemaVersion) {
		t.Fatalf("schema = %v v%v", doc["schema"], doc["schema_version"])
	}
	for _, field := range []string{"started_at", "finished_at", "resumed", "primary", "shadow", "scope", "options",
		"totals", "modules", "divergences", "divergences_omitted", "repair", "parity", "passed"} {
		if _, ok := doc[field]; !ok {
			t.Errorf("no %q in the JSON", field)
		}
	}
	kinds := doc["totals"].(map[string]any)["kinds"].(map[string]any)
	if len(kinds) != len(compare.Kinds) {
		t.Errorf("totals.kinds has %d kinds, want every one of %d", len(kinds), len(compare.Kinds))
	}
	var back report.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	sameResult(t, &back, r)
	for _, leak := range []string{"SECRET-VALUE", "only primary", `"wordle:c"`} {
		if strings.Contains(b.String(), leak) {
			t.Errorf("JSON holds %q", leak)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]report.Format{"": report.FormatTable, "JSON": report.FormatJSON, "md": report.FormatMarkdown, "html": report.FormatHTML} {
		if got, err := report.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := report.ParseFormat("pdf"); err == nil {
		t.Error("pdf accepted")
	}
}

func TestRenderEmptyStores(t *testing.T) {
	f := newFixture(t)
	r := run(t, report.Config{Primary: report.Side{Store: newCounted(f.clk)}, Shadow: report.Side{Store: newCounted(f.clk)}, Clock: f.clk})
	for _, format := range []report.Format{report.FormatTable, report.FormatJSON, report.FormatMarkdown, report.FormatHTML} {
		var b bytes.Buffer
		if err := report.Render(&b, r, format); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if format != report.FormatJSON && !strings.Contains(b.String(), "100.00%") {
			t.Errorf("%s of empty stores does not show full parity:\n%s", format, b.String())
		}
	}
}

func TestRenderRefusesNothing(t *testing.T) {
	for _, f := range []report.Format{report.FormatTable, report.FormatJSON, report.FormatMarkdown, report.FormatHTML} {
		if err := report.Render(io.Discard, nil, f); err == nil {
			t.Errorf("%s: rendered a nil report", f)
		}
	}
}

// Many modules: the chart draws the 20 with the most keys that differ, says
// how many more there are, and names at most 40 modules in step.
func TestHTMLChartsCapModules(t *testing.T) {
	r := &report.Report{Options: report.Options{MinParity: 100}}
	for i := range 70 {
		c := report.Counts{Compared: 10, Kinds: report.KindCounts{compare.Match: 10}, Parity: 100}
		if i < 25 {
			c.Kinds = report.KindCounts{compare.Match: int64(10 - i%9 - 1), compare.ValueMismatch: int64(i%9 + 1)}
			c.Parity = float64(10-i%9-1) * 10
		}
		r.Modules = append(r.Modules, report.ModuleCounts{Module: fmt.Sprintf("m%02d", i), Counts: c})
	}
	var b bytes.Buffer
	if err := report.Render(&b, r, report.FormatHTML); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `<div class="bar-row module"`); n != 20 {
		t.Errorf("%d module bars, want 20", n)
	}
	if !strings.Contains(page, "5 more modules with keys that differ") || !strings.Contains(page, "m64 and 5 more.") {
		t.Errorf("the caps are not said:\n%s", section(t, page, `id="modules-chart"`))
	}
	// The most divergent first: 9 of 10 keys differ in m08 and m17.
	where := section(t, page, `id="modules-chart"`)
	if i, j := strings.Index(where, `data-module="m08"`), strings.Index(where, `data-module="m00"`); i < 0 || j >= 0 && j < i {
		t.Errorf("m08 (9 differ) is not drawn before m00 (1 differs)")
	}
	// Bars are the share of each module's keys, on an axis whose end is
	// printed: 9 of 10 keys are 90% of the axis to 100%, 2 of 10 are 20%.
	if !strings.Contains(where, `<span style="left: 100%">100%</span>`) {
		t.Errorf("the axis does not end at 100%%: %s", where)
	}
	for module, w := range map[string]string{"m08": "90.00%", "m01": "20.00%"} {
		_, bar, ok := strings.Cut(where, `data-module="`+module+`"`)
		bar, _, _ = strings.Cut(bar, `<div class="bar-value`)
		if !ok || !strings.Contains(bar, `style="width: `+w+`"`) {
			t.Errorf("module %s's bar is not %s wide: %s", module, w, bar)
		}
	}
}

// TestJSONWritesTextAsIs: the JSON format is read by people and programs
// alike: a key's "<" or "&" is written as is, never \u003c or \u0026.
func TestJSONWritesTextAsIs(t *testing.T) {
	r := renderFixture(t, nil)
	var b bytes.Buffer
	if err := report.Render(&b, r, report.FormatJSON); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) || !strings.Contains(out, "<b>") {
		t.Errorf("the JSON escapes text for HTML, or lacks the fixture's key <b>:\n%s", out)
	}
}

// TestFiguresAsWritten: a sample rate is printed as the operator wrote it
// (7%), never as the float's sum (7.000000000000001%).
func TestFiguresAsWritten(t *testing.T) {
	r := renderFixture(t, func(c *report.Config) { c.Scope.SampleRate = 0.07 })
	var b bytes.Buffer
	if err := report.Render(&b, r, report.FormatTable); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "sample 7%") || strings.Contains(out, "00000000") {
		t.Errorf("the scope line does not say sample 7%%:\n%s", out)
	}
}
