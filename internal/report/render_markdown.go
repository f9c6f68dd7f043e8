package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// renderMarkdown writes the report for a change request: GitHub-flavoured
// tables, keys escaped so that none can break a table or a page.
func renderMarkdown(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Shadow parity report\n\n")
	fmt.Fprintf(bw, "**%s**\n\n", verdict(r))
	fmt.Fprintf(bw, "- Stores: %s (primary) vs %s (shadow)\n", mdText(r.Primary.Name), mdText(r.Shadow.Name))
	fmt.Fprintf(bw, "- Run: %s\n", mdText(timeLine(r)))
	fmt.Fprintf(bw, "- Scope: %s\n", mdText(scopeLine(r)))
	if t := truthLine(r); t != "" {
		fmt.Fprintf(bw, "- Truth: %s\n", mdText(t[len("truth: "):]))
	}
	fmt.Fprintln(bw)

	fmt.Fprintf(bw, "## Parity per module\n\n")
	mdRow(bw, []string{"Module", "Primary", "Shadow", "Compared", "Match", "Missing", "Extra", "Value", "JSON", "TTL", "Expired", "Errors", "Parity"})
	fmt.Fprintf(bw, "|---|%s\n", strings.Repeat("---:|", len(tableHeader)-1))
	for _, m := range r.Modules {
		mdRow(bw, countsRow(mdText(moduleLabel(m.Module)), m.Counts))
	}
	total := countsRow("**Total**", r.Totals)
	total[len(total)-1] = "**" + total[len(total)-1] + "**"
	mdRow(bw, total)

	if n := int64(len(r.Divergences)); n > 0 {
		fmt.Fprintf(bw, "\n## Keys that differ\n\n%s of %s listed; values appear only as length and hash.\n\n", group(n), group(n+r.DivergencesOmitted))
		mdRow(bw, []string{"Kind", "Key", "Primary", "Shadow", "Error"})
		fmt.Fprintf(bw, "|---|---|---|---|---|\n")
		for _, d := range r.Divergences {
			mdRow(bw, []string{"`" + string(d.Kind) + "`", mdText(d.Key), mdText(digest(d.Primary)), mdText(digest(d.Shadow)), mdText(orString(d.Error, "-"))})
		}
	}

	if lines := kindLines(r); lines != nil {
		fmt.Fprintf(bw, "\n## What the kinds mean, and what to do\n\n")
		for _, l := range lines {
			fmt.Fprintf(bw, "- %s\n", mdText(l))
		}
	}

	for _, sec := range callOuts(r) {
		fmt.Fprintf(bw, "\n## %s\n\n%s\n\n", sec.title, mdText(sec.note))
		mdRow(bw, []string{"Kind", "Key", "Primary", "Shadow"})
		fmt.Fprintf(bw, "|---|---|---|---|\n")
		for _, d := range sec.records {
			mdRow(bw, []string{"`" + string(d.Kind) + "`", mdText(d.Key), mdText(digest(d.Primary)), mdText(digest(d.Shadow))})
		}
	}

	fmt.Fprintf(bw, "\n## Requests\n\n- %s\n- %s\n", mdText(requestsLine(r.Primary)), mdText(requestsLine(r.Shadow)))
	if lines := repairLines(r); lines != nil {
		fmt.Fprintf(bw, "\n## Repair\n\n")
		for _, l := range lines {
			fmt.Fprintf(bw, "- %s\n", mdText(l))
		}
	}
	if lines := settleLines(r); lines != nil {
		fmt.Fprintf(bw, "\n## Read again\n\n")
		for _, l := range lines {
			fmt.Fprintf(bw, "- %s\n", mdText(l))
		}
	}
	return bw.Flush()
}

func mdRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// mdEscaper backslash-escapes the Markdown punctuation that can act inside
// a line (emphasis, code, links, table pipes) and HTML's angle brackets and
// ampersand, so a key is always read as text.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `|`, `\|`,
	`~`, `\~`, `<`, `&lt;`, `>`, `&gt;`, `&`, `&amp;`,
)

func mdText(s string) string { return mdEscaper.Replace(printable(s)) }
