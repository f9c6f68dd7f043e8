package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// tableHeader is the terminal table's columns; the kinds follow scanKinds.
var tableHeader = []string{
	"MODULE", "PRIMARY", "SHADOW", "COMPARED", "MATCH", "MISSING", "EXTRA",
	"VALUE", "JSON", "TTL", "META", "EXPIRED", "ERRORS", "PARITY",
}

func countsRow(label string, c Counts) []string {
	row := []string{label, group(c.PrimaryKeys), group(c.ShadowKeys), group(c.Compared)}
	for _, k := range scanKinds {
		row = append(row, group(c.Kinds[k]))
	}
	return append(row, group(errorsOf(c.Kinds)), percent(c.Parity))
}

// renderTable writes the report for a terminal: fixed columns, no colour,
// so that it survives pipes and logs.
func renderTable(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	if err := tableBody(bw, r); err != nil {
		return err
	}
	fmt.Fprintf(bw, "\n%s\n", verdict(r))
	return bw.Flush()
}

// RenderTableBody writes the terminal table without its last line, the
// verdict, for a caller that says what the verdict means in its own words
// (the demo, whose gate is meant to fail before its repair).
func RenderTableBody(w io.Writer, r *Report) error {
	if r == nil || w == nil {
		return errors.New("report: RenderTableBody needs a writer and a report")
	}
	bw := bufio.NewWriter(w)
	if err := tableBody(bw, r); err != nil {
		return err
	}
	return bw.Flush()
}

func tableBody(bw *bufio.Writer, r *Report) error {
	fmt.Fprintf(bw, "shadow-report: %s (primary) vs %s (shadow)\n", r.Primary.Name, r.Shadow.Name)
	fmt.Fprintf(bw, "%s\n%s\n", timeLine(r), scopeLine(r))
	if t := truthLine(r); t != "" {
		fmt.Fprintf(bw, "%s\n", printable(t))
	}
	fmt.Fprintln(bw)

	// Numbers align right; the module column is padded here so that it
	// reads left-aligned in a right-aligned table.
	labels := []string{tableHeader[0], "TOTAL"}
	for _, m := range r.Modules {
		labels = append(labels, printable(moduleLabel(m.Module)))
	}
	width := 0
	for _, l := range labels {
		width = max(width, utf8.RuneCountInString(l))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		cells[0] = pad(cells[0])
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(slices.Clone(tableHeader))
	for i, m := range r.Modules {
		line(countsRow(labels[i+2], m.Counts))
	}
	line(countsRow("TOTAL", r.Totals))
	if err := tw.Flush(); err != nil {
		return err
	}

	if n := int64(len(r.Divergences)); n > 0 {
		fmt.Fprintf(bw, "\nKeys that differ (%s of %s; values are shown as length and hash only):\n", group(n), group(n+r.DivergencesOmitted))
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tKEY\tPRIMARY\tSHADOW\tERROR")
		for _, d := range r.Divergences {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Kind, printable(d.Key), digest(d.Primary), digest(d.Shadow), orString(d.Error, "-"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	if lines := kindLines(r); lines != nil {
		fmt.Fprintf(bw, "\nWhat the kinds mean, and what to do:\n  %s\n", strings.Join(lines, "\n  "))
	}

	for _, sec := range callOuts(r) {
		fmt.Fprintf(bw, "\n%s: %s\n", sec.title, sec.note)
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tKEY\tPRIMARY\tSHADOW")
		for _, d := range sec.records {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Kind, printable(d.Key), digest(d.Primary), digest(d.Shadow))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(bw, "\nRequests\n  %s\n  %s\n", requestsLine(r.Primary), requestsLine(r.Shadow))
	if lines := repairLines(r); lines != nil {
		fmt.Fprintf(bw, "\nRepair\n  %s\n", strings.Join(lines, "\n  "))
	}
	if lines := settleLines(r); lines != nil {
		fmt.Fprintf(bw, "\nRead again\n  %s\n", strings.Join(lines, "\n  "))
	}
	return nil
}
