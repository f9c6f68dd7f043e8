package report

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/kvshadow/kvshadow/compare"
)

// tableHeader is the counts table's columns; the kinds follow scanKinds.
var tableHeader = []string{
	"MODULE", "PRIMARY", "SHADOW", "COMPARED", "MATCH", "MISSING", "EXTRA",
	"VALUE", "JSON", "TTL", "META", "EXPIRED", "ERRORS", "PARITY",
}

func countsRow(label string, c Counts) []string {
	row := []string{label, group(c.PrimaryKeys), group(c.ShadowKeys), group(c.Compared)}
	for _, k := range scanKinds {
		row = append(row, group(c.Kinds[k]))
	}
	return append(row, group(errorsOf(c.Kinds)), Percent(c.Parity))
}

// countsRows are the counts table's rows, a module each and the total last.
func countsRows(r *Report) [][]string {
	rows := make([][]string, 0, len(r.Modules)+1)
	for _, m := range r.Modules {
		rows = append(rows, countsRow(moduleLabel(m.Module), m.Counts))
	}
	return append(rows, countsRow("TOTAL", r.Totals))
}

// A part is a section of the report as the text formats print it, after
// the counts: a title, a note under it, a table, lines. A part with neither
// table nor lines is not printed.
type part struct {
	title, note string
	head        []string
	rows        [][]string
	lines       []string
}

// parts are what the table and the Markdown say after the counts, in order;
// every cell and line is raw, for the format to escape.
func parts(r *Report) []part {
	var ps []part
	if n := int64(len(r.Divergences)); n > 0 {
		ps = append(ps, recordPart("Keys that differ", fmt.Sprintf("%s of %s listed; values appear only as length and hash.", group(n), group(n+r.DivergencesOmitted)), r.Divergences, true))
	}
	ps = append(ps, part{title: "What the kinds mean, and what to do", lines: kindLines(r)})
	for _, c := range callOuts(r) {
		ps = append(ps, recordPart(c.Title, c.Note, c.Records, false))
	}
	return append(ps, part{title: "Requests", lines: []string{requestsLine(r.Primary), requestsLine(r.Shadow)}},
		part{title: "Repair", lines: repairLines(r)}, part{title: "Read again", lines: settleLines(r)})
}

// recordPart lists records as what they keep of each side, with their
// error's class when withError.
func recordPart(title, note string, records []compare.Record, withError bool) part {
	p := part{title: title, note: note, head: []string{"KIND", "KEY", "PRIMARY", "SHADOW"}}
	if withError {
		p.head = append(p.head, "ERROR")
	}
	for _, d := range records {
		row := []string{string(d.Kind), d.Key, digest(d.Primary), digest(d.Shadow)}
		if withError {
			row = append(row, cmp.Or(d.Error, "-"))
		}
		p.rows = append(p.rows, row)
	}
	return p
}

func escaped(cells []string, text func(string) string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = text(c)
	}
	return out
}

// RenderTableBody writes the terminal table without its last line, the
// verdict, for a caller that says what the verdict means in its own words
// (the demo, whose gate is meant to fail before its repair).
func RenderTableBody(w io.Writer, r *Report) error {
	if r == nil || w == nil {
		return errors.New("report: RenderTableBody needs a writer and a report")
	}
	return writeTable(w, r, false)
}

// writeTable writes the report for a terminal: fixed columns, no colour,
// so that it survives pipes and logs.
func writeTable(w io.Writer, r *Report, withVerdict bool) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "shadow-report: %s (primary) vs %s (shadow)\n%s\n%s\n", r.Primary.Name, r.Shadow.Name, timeLine(r), scopeLine(r))
	if t := truthLine(r); t != "" {
		fmt.Fprintf(bw, "%s\n", printable(t))
	}
	fmt.Fprintln(bw)

	// Numbers align right; the module column is padded here so that it
	// reads left-aligned in a right-aligned table.
	rows := append([][]string{tableHeader}, countsRows(r)...)
	width := 0
	for i, row := range rows {
		rows[i] = escaped(row, printable)
		width = max(width, utf8.RuneCountInString(row[0]))
	}
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range rows {
		label := row[0] + strings.Repeat(" ", width-utf8.RuneCountInString(row[0]))
		fmt.Fprintln(tw, label+"\t"+strings.Join(row[1:], "\t")+"\t")
	}
	_ = tw.Flush() // its errors are bw's, which Flush returns

	for _, p := range parts(r) {
		if p.head == nil && p.lines == nil {
			continue
		}
		if p.note != "" {
			fmt.Fprintf(bw, "\n%s: %s\n", p.title, p.note)
		} else {
			fmt.Fprintf(bw, "\n%s\n", p.title)
		}
		if p.head != nil {
			tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
			for _, row := range append([][]string{p.head}, p.rows...) {
				fmt.Fprintln(tw, strings.Join(escaped(row, printable), "\t"))
			}
			_ = tw.Flush()
		}
		for _, l := range p.lines {
			fmt.Fprintf(bw, "  %s\n", printable(l))
		}
	}
	if withVerdict {
		fmt.Fprintf(bw, "\n%s\n", Verdict(r))
	}
	return bw.Flush()
}

// renderMarkdown writes the report for a change request: GitHub-flavoured
// tables, keys escaped so that none can break a table or a page.
func renderMarkdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Shadow parity report\n\n**%s**\n\n", Verdict(r))
	fmt.Fprintf(bw, "- Stores: %s (primary) vs %s (shadow)\n", mdText(r.Primary.Name), mdText(r.Shadow.Name))
	fmt.Fprintf(bw, "- Run: %s\n- Scope: %s\n", mdText(timeLine(r)), mdText(scopeLine(r)))
	if t := truthLine(r); t != "" {
		fmt.Fprintf(bw, "- Truth: %s\n", mdText(strings.TrimPrefix(t, "truth: ")))
	}
	counts := part{title: "Parity per module", head: tableHeader, rows: countsRows(r)}
	for i, p := range append([]part{counts}, parts(r)...) {
		if p.head == nil && p.lines == nil {
			continue
		}
		fmt.Fprintf(bw, "\n## %s\n\n", p.title)
		if p.note != "" {
			fmt.Fprintf(bw, "%s\n\n", mdText(p.note))
		}
		if p.head != nil {
			align := "---|" // the counts' numbers align right
			if i == 0 {
				align = "---:|"
			}
			fmt.Fprintf(bw, "| %s |\n|---|%s\n", strings.Join(p.head, " | "), strings.Repeat(align, len(p.head)-1))
			for _, row := range p.rows {
				fmt.Fprintf(bw, "| %s |\n", strings.Join(escaped(row, mdText), " | "))
			}
		}
		for _, l := range p.lines {
			fmt.Fprintf(bw, "- %s\n", mdText(l))
		}
	}
	return bw.Flush()
}

// mdEscaper backslash-escapes the Markdown punctuation that can act inside
// a line (emphasis, code, links, table pipes) and HTML's angle brackets and
// ampersand, so a key is always read as text.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `|`, `\|`,
	`~`, `\~`, `<`, `&lt;`, `>`, `&gt;`, `&`, `&amp;`,
)

func mdText(s string) string { return mdEscaper.Replace(printable(s)) }
