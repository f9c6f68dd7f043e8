package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/atomicfile"
	"github.com/kvshadow/kvshadow/kv"
)

// Format names an output format.
type Format string

// The formats.
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
)

// ParseFormat reads a format name; "" means FormatTable, "md" FormatMarkdown.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case "":
		return FormatTable, nil
	case "md":
		return FormatMarkdown, nil
	case FormatTable, FormatJSON, FormatMarkdown, FormatHTML:
		return f, nil
	}
	return "", fmt.Errorf("%w: format %q (want table, json, markdown or html)", ErrConfig, s)
}

// Render writes r to w in format f.
func Render(w io.Writer, r *Report, f Format) error {
	if r == nil || w == nil {
		return errors.New("report: Render needs a writer and a report")
	}
	switch f {
	case FormatTable, "":
		return writeTable(w, r, true)
	case FormatJSON:
		return renderJSON(w, r)
	case FormatMarkdown:
		return renderMarkdown(w, r)
	case FormatHTML:
		return renderHTML(w, r)
	}
	return fmt.Errorf("%w: format %q", ErrConfig, f)
}

// WriteFile renders r in format f to path through a temporary file renamed
// into place, so that a failed render leaves no half report.
func WriteFile(path string, r *Report, f Format) error {
	var b bytes.Buffer
	if err := Render(&b, r, f); err != nil {
		return err
	}
	return atomicfile.Write(path, b.Bytes(), 0o644)
}

func renderJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a verdict's "<" stays "<", never \u003c
	return enc.Encode(r)
}

// scanKinds are the kinds a scan can find, in column order; pending and
// inconclusive only arise in a repair's re-check.
var scanKinds = []compare.Kind{
	compare.Match, compare.MissingInShadow, compare.ExtraInShadow, compare.ValueMismatch,
	compare.JSONEquivalent, compare.TTLMismatch, compare.MetadataMismatch, compare.ExpiredOnOneSide,
}

// errorsOf sums the error kinds, shown as one column.
func errorsOf(k KindCounts) int64 { return k[compare.PrimaryError] + k[compare.ShadowError] }

// Percent prints a parity as every report does: two decimals, truncated,
// so that 99.9999 is "99.99%", never "100.00%".
func Percent(p float64) string { return percentN(p, 2) }

// percentN prints a parity with n decimals (at most 4, parity's precision),
// truncated.
func percentN(p float64, n int) string {
	n = min(max(n, 0), 4)
	s := strconv.FormatFloat(p, 'f', 4, 64)
	s = s[:len(s)-(4-n)]
	return strings.TrimSuffix(s, ".") + "%"
}

// minimum prints the gate's minimum as given, every decimal kept, and
// returns the decimals that the parity beside it needs (at least two) so
// that "99.99% >= 99.995%" can never be printed for a passing gate.
func minimum(m float64) (string, int) {
	s := strconv.FormatFloat(m, 'f', -1, 64)
	_, frac, _ := strings.Cut(s, ".")
	return s + "%", max(len(frac), 2)
}

// moduleLabel names a module for people.
func moduleLabel(m string) string {
	switch m {
	case "":
		return "(no module)"
	case OtherModules:
		return "(other modules)"
	}
	return m
}

// printable escapes what a terminal or a page must not receive raw: a
// plain key may hold control characters, including escape sequences.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsGraphic(r) && r != '\\' {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// digest prints what a record keeps of one side's value.
func digest(d compare.Digest) string {
	if !d.Present {
		return "-"
	}
	s := fmt.Sprintf("%dB #%s", d.Length, d.Hash[:min(len(d.Hash), 8)])
	if !d.Expiration.IsZero() {
		s += " exp " + d.Expiration.UTC().Format(time.RFC3339)
	}
	return s
}

// scopeLine summarises the scope in one line.
func scopeLine(r *Report) string {
	var parts []string
	s := r.Scope
	switch {
	case s.KeyList > 0:
		parts = append(parts, fmt.Sprintf("a list of %d keys, not a full scan", s.KeyList))
	case len(s.Modules) == 0 && len(s.Prefixes) == 0:
		parts = append(parts, "all keys")
	}
	if len(s.Modules) > 0 {
		parts = append(parts, "modules "+strings.Join(s.Modules, ","))
	}
	if len(s.Prefixes) > 0 {
		parts = append(parts, "prefixes "+printable(strings.Join(s.Prefixes, ",")))
	}
	if len(s.ExcludeModules) > 0 {
		parts = append(parts, "excluding modules "+strings.Join(s.ExcludeModules, ","))
	}
	if len(s.ExcludePrefixes) > 0 {
		parts = append(parts, "excluding prefixes "+printable(strings.Join(s.ExcludePrefixes, ",")))
	}
	if n := r.Totals.Excluded; n > 0 {
		parts = append(parts, fmt.Sprintf("%d keys excluded (%s always is)", n, kv.ReservedPrefix))
	}
	if s.SampleRate < 1 {
		// Rounded to a millionth: 0.07*100 is 7.000000000000001.
		parts = append(parts, fmt.Sprintf("sample %g%%", math.Round(s.SampleRate*1e8)/1e6))
	}
	parts = append(parts, fmt.Sprintf("TTL tolerance %gs", r.Options.TTLToleranceSeconds))
	if !r.Options.ExpiriesCompared {
		parts = append(parts, "expiries not compared")
	}
	parts = append(parts, "keys "+string(r.Options.KeyPolicy)+hashNote(r.Options))
	return strings.Join(parts, " · ")
}

// hashNote says whether a hashed key can be followed from one report to
// the next.
func hashNote(o Options) string {
	switch {
	case o.KeyPolicy != compare.KeyHMAC:
		return ""
	case o.StableHashes:
		return " (keyed by the configured secret: the same in every run and in the proxy's answers)"
	}
	return " (keyed by a secret drawn for this run: set KVSHADOW_KEY_SECRET, the proxy's, to follow a key from one report to the next)"
}

// timeLine says when the run ran.
func timeLine(r *Report) string {
	s := fmt.Sprintf("%s, took %s", r.StartedAt.UTC().Format(time.RFC3339), r.FinishedAt.Sub(r.StartedAt).Round(time.Second))
	if r.Resumed {
		s += " (resumed from a checkpoint)"
	}
	if r.RunID != "" {
		s += ", run " + r.RunID
	}
	return s
}

func requestsLine(s SideInfo) string {
	q := s.Requests
	return fmt.Sprintf("%s: %s requests (%s list, %s get, %s put, %s delete; %s retries), budget %s",
		s.Name, group(q.Total), group(q.List), group(q.Get), group(q.Put), group(q.Delete), group(q.Retries), s.Budget)
}

func repairLines(r *Report) []string {
	rep := r.Repair
	if rep == nil {
		return nil
	}
	other := Shadow
	if rep.Authoritative == Shadow {
		other = Primary
	}
	if !rep.Applied {
		return []string{
			fmt.Sprintf("dry run, copying %s over %s: would put %s keys and delete %s (%s expiring within a minute); rerun with --apply to write",
				rep.Authoritative, other, group(rep.Puts), group(rep.Deletes), group(rep.Expiring)),
		}
	}
	return []string{
		fmt.Sprintf("applied, copying %s over %s: put %s keys, deleted %s (%s expiring within a minute), %s failed",
			rep.Authoritative, other, group(rep.Puts), group(rep.Deletes), group(rep.Expiring), group(rep.Failed)),
		fmt.Sprintf("re-checked %s: %s agree, %s pending (read back inside the primary's consistency window), %s still differ; parity after repair %s",
			group(rep.Rechecked), group(rep.Verified), group(rep.Pending), group(rep.Remaining), Percent(rep.ParityAfter)),
	}
}

// settleListed is how many keys left for later the text formats name.
const settleListed = 20

// settleLines say what reading the differing keys again found, and name
// the keys left for later with the reason.
func settleLines(r *Report) []string {
	s := r.Settle
	if s == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("the %s that differed were read again %s after the scan read them: %s agree now, %s held the same difference (divergent), %s changed and are left for later (pending: a write or its copy was on its way; out of the gated parity)%s",
		plural(s.Rechecked+s.Omitted, "key"), time.Duration(s.Seconds*float64(time.Second)).Round(time.Second), group(s.Settled), group(s.Held), group(s.Left), settleExtra(s))}
	for i, k := range r.LeftForLater {
		if i == settleListed {
			lines = append(lines, fmt.Sprintf("... and %s more left for later (the JSON report lists up to --max-records)", group(int64(len(r.LeftForLater)-i))))
			break
		}
		lines = append(lines, fmt.Sprintf("left for later: %s (%s at the scan): %s", k.Key, k.Kind, k.Reason))
	}
	return lines
}

func settleExtra(s *SettleReport) string {
	var out string
	if s.Errors > 0 {
		out += fmt.Sprintf("; %s could not be read again and count as the scan found them", group(s.Errors))
	}
	if s.Omitted > 0 {
		out += fmt.Sprintf("; %s past the first %s were not read again and count as the scan found them", group(s.Omitted), group(DefaultMaxSettle))
	}
	return out
}

// Verdict is the gate's one line, as every format ends or begins with it:
// "PASS: parity 100.00% >= minimum 99.9%".
func Verdict(r *Report) string {
	word, op := "PASS", ">="
	if !r.Passed {
		word, op = "FAIL", "<"
	}
	which := "parity"
	if r.Repair != nil && r.Repair.Applied {
		which = "parity after repair"
	}
	m, decimals := minimum(r.Options.MinParity)
	s := fmt.Sprintf("%s: %s %s %s minimum %s", word, which, percentN(r.Parity, decimals), op, m)
	if r.authority() == compare.ShadowAlone {
		s = fmt.Sprintf("PASS: no gate after complete; %s %s: Workers KV, no longer written, falls behind MongoDB as expected", which, percentN(r.Parity, decimals))
	}
	if n := r.Totals.BinaryInShadow; n > 0 {
		s += fmt.Sprintf("; %s in the shadow not UTF-8 text, which the JavaScript bot cannot read as a string", plural(n, "value"))
	}
	if n := r.Totals.TooLargeForBot; n > 0 {
		s += fmt.Sprintf("; %s in the shadow too large for one document, which the JavaScript bot reads as missing", plural(n, "value"))
	}
	if r.Settle != nil && r.Settle.Left > 0 {
		s += fmt.Sprintf("; %s left for later: changed between two reads, a write or its copy on its way", plural(r.Settle.Left, "key"))
	}
	return s
}

// kindLines explain, one line each, every kind the report counts beyond
// match (in the scan, or in a repair's re-check): what it means and what to
// do about it.
func kindLines(r *Report) []string {
	var lines []string
	for _, k := range compare.Kinds {
		n := r.Totals.Kinds[k]
		if r.Repair != nil {
			n += r.Repair.After[k]
		}
		if k == compare.Match || n == 0 {
			continue
		}
		e := compare.Explain(k, r.authority())
		lines = append(lines, fmt.Sprintf("%s: %s. Do: %s.", k, e.Meaning, e.Action))
	}
	return lines
}

// plural is "1 key holds" or "3 keys hold", "1 value" or "2 values".
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	noun, verb, ok := strings.Cut(what, " ")
	if ok {
		return group(n) + " " + noun + "s " + strings.TrimSuffix(verb, "s")
	}
	return group(n) + " " + noun + "s"
}

// callOut is a section of keys the bot cannot read as the Go layer does.
type callOut struct {
	ID, Table, Title, Note string
	Records                []compare.Record
}

// callOuts are the report's sections of such keys, in order: values that
// are not text, values too large for the bot's document shape.
func callOuts(r *Report) []callOut {
	var out []callOut
	// add completes c, a call-out of n keys each of which holds what, the
	// bot's problem; do is the first remedy.
	add := func(n int64, c callOut, what, do string) {
		if n == 0 {
			return
		}
		c.Title = fmt.Sprintf("%s (%s)", c.Title, group(n))
		c.Note = fmt.Sprintf("%s %s. Parity counts these keys by their bytes, as the Go layer reads them; %s or keep the bot off MongoDB for them. %s listed.",
			plural(n, "key holds"), what, do, group(int64(len(c.Records))))
		out = append(out, c)
	}
	add(r.Totals.BinaryInShadow, callOut{ID: "binary-in-shadow", Table: "binary", Title: "Values the JavaScript bot cannot read", Records: r.BinaryInShadow},
		"a shadow value that is not valid UTF-8. MongoDB stores it as BSON Binary, which the JavaScript bot "+
			"reads as an object, not a string", "rewrite them as text")
	add(r.Totals.TooLargeForBot, callOut{ID: "too-large-for-bot", Table: "too-large", Title: "Values too large for the JavaScript bot", Records: r.TooLargeForBot},
		"a shadow value longer than one MongoDB document holds (16 MiB with its key). kvshadow keeps it in chunks, "+
			"and the JavaScript bot, which reads the document's value field, reads the key as missing", "make the values smaller")
	return out
}
