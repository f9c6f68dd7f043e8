package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/service/admin"
)

// verdict checks what the bot saw, runs shadow-report over both stores,
// writes its pages, repairs and checks again.
func (d *demo) verdict(ctx context.Context, stats admin.StoreStats) error {
	cfg, out, w, primary, shadow, red := d.cfg, d.out, d.work, d.primary, d.mongo, d.red
	flips := int(d.st.flips.Load())
	var problems []string
	if flips < 2 {
		problems = append(problems, fmt.Sprintf("%d of the 2 flips of authority (to live, and back) were made", flips))
	}
	if n := w.errs.Load(); n > 0 {
		problems = append(problems, fmt.Sprintf("the bot saw %d errors (first: %v)", n, w.firstErr))
	}
	if stats.Drops[string(dualwrite.DropBreakerOpen)] == 0 && stats.Drops[string(dualwrite.DropShadowError)] == 0 {
		problems = append(problems, "the outage dropped no copy: the breaker was never exercised")
	}
	if stats.Repairs[string(dualwrite.RepairCopied)]+stats.Repairs[string(dualwrite.RepairDeleted)] == 0 {
		problems = append(problems, "repair copied nothing after the outage")
	}
	if n := stats.Divergences; n > 0 {
		problems = append(problems, fmt.Sprintf("the layer reported %d divergences of its own making", n))
	}

	fmt.Fprintf(out, "\nThe bot made %d operations (%d reads, %d writes, %d deletes, %d listings) and saw %d errors,\n",
		w.ops.Load(), w.reads.Load(), w.writes.Load(), w.deletes.Load(), w.lists.Load(), w.errs.Load())
	fmt.Fprintf(out, "through the flip to live (MongoDB authoritative) and back to shadow (%d of 2 flips made).\n", flips)
	fmt.Fprintf(out, "Shadow copies not made, each key marked dirty: %s.\n", countsLine(stats.Drops, dualwrite.DropReasons[:], dropWords))
	fmt.Fprintf(out, "Repair of the dirty keys: %s.\n\n", countsLine(stats.Repairs, dualwrite.RepairOutcomes[:], repairWords))

	rcfg := report.Config{
		Primary:   report.Side{Store: primary, Name: "cloudflare_kv"},
		Shadow:    report.Side{Store: shadow, Name: "mongodb"},
		KeyPolicy: compare.KeyHMAC,
		Secret:    []byte(keySecret),
	}
	rep, err := report.Run(ctx, rcfg)
	if err != nil {
		return fmt.Errorf("shadow-report: %w", err)
	}
	fmt.Fprintf(out, "shadow-report over both stores (it has to find the %d injected divergences):\n", len(injections))
	if err := report.RenderTableBody(out, rep); err != nil {
		return err
	}
	if rep.Passed {
		problems = append(problems, "the gate passed although divergences were injected")
	} else {
		fmt.Fprintf(out, "\nThe gate holds the cutover back here, as expected: parity %s is below the minimum 100%% because of the injected divergences.\n", report.Percent(rep.Parity))
	}
	htmlPath := filepath.Join(cfg.dir, "shadow-report.html")
	jsonPath := filepath.Join(cfg.dir, "shadow-report.json")
	for path, f := range map[string]report.Format{htmlPath: report.FormatHTML, jsonPath: report.FormatJSON} {
		if err := report.WriteFile(path, rep, f); err != nil {
			return err
		}
	}
	abs, _ := filepath.Abs(htmlPath)
	fmt.Fprintf(out, "\nHTML report: %s\nJSON report: %s\n", abs, jsonPath)
	if err := checkFound(rep.Divergences, red); err != nil {
		problems = append(problems, err.Error())
	}

	// Repair, as an engineer would before the cutover, and check again.
	rcfg.Repair = report.Repair{Enabled: true, Apply: true, Authoritative: report.Primary}
	fixed, err := report.Run(ctx, rcfg)
	if err != nil {
		return fmt.Errorf("shadow-report --repair --apply: %w", err)
	}
	after, err := report.Run(ctx, report.Config{Primary: rcfg.Primary, Shadow: rcfg.Shadow, Secret: rcfg.Secret})
	if err != nil {
		return fmt.Errorf("shadow-report after repair: %w", err)
	}
	fmt.Fprintf(out, "shadow-report --repair --apply: %d puts, %d deletes; a new scan finds parity %s over %d keys, and the gate lets the cutover go.\n",
		fixed.Repair.Puts, fixed.Repair.Deletes, report.Percent(after.Parity), after.Totals.Compared)
	if !after.Passed {
		problems = append(problems, fmt.Sprintf("parity after repair is %s, want 100%%", report.Percent(after.Parity)))
	}

	if len(problems) > 0 {
		fmt.Fprintf(out, "\nFAILED:\n  - %s\n", strings.Join(problems, "\n  - "))
		return errVerdict
	}
	fmt.Fprintln(out, "\nOK: the bot never felt the shadow nor the flip to live and back, repair restored parity, and the report found exactly the injected divergences.")
	return nil
}

// The words of the summary's counts.
var (
	dropWords = map[dualwrite.DropReason]string{
		dualwrite.DropBreakerOpen: "skipped while the breaker was open",
		dualwrite.DropShadowError: "failed against MongoDB",
		dualwrite.DropTimeout:     "timed out",
		dualwrite.DropLaneFull:    "dropped from a full lane",
		dualwrite.DropClosed:      "left at close",
	}
	repairWords = map[dualwrite.RepairOutcome]string{
		dualwrite.RepairCopied:   "copied",
		dualwrite.RepairDeleted:  "deleted",
		dualwrite.RepairDeferred: "deferred to wait out the consistency window (then retried)",
		dualwrite.RepairFailed:   "failed (then retried)",
		dualwrite.RepairUnneeded: "found both stores equal already",
		dualwrite.RepairHeld:     "held, a delete in bulk waiting for an operator",
	}
)

// countsLine words counts in a stable order, leaving zeros out: "695
// skipped while the breaker was open, 12 failed against MongoDB".
func countsLine[K ~string](counts map[string]uint64, order []K, words map[K]string) string {
	var parts []string
	for _, k := range order {
		if n := counts[string(k)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, words[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
