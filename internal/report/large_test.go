package report_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv/kvfault"
)

// A batch whose values pass what one bulk read may return (kvfault's
// MaxBulkBytes stands for Workers KV's 25 MiB, refused with 413) is read in
// pieces, a value larger than the limit alone, and every key is compared:
// parity 100%, where a batch refused whole would count every key an error.
func TestScanReadsValuesPastTheBulkLimit(t *testing.T) {
	const limit = 1000
	clk := clock.NewFake(epoch)
	var sides [2]*kvfault.Store
	for i, name := range []string{"primary", "shadow"} {
		s, err := kvfault.New(memory.New(memory.Config{Clock: clk}), kvfault.Config{Name: name, Clock: clk, MaxBulkBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		sides[i] = s
	}
	sizes := map[string]int{"m:huge": limit + 1, "m:large": 640, "m:medium": 400}
	for i := range 30 {
		sizes[fmt.Sprintf("m:small%02d", i)] = 1 + i
	}
	for k, n := range sizes {
		for _, s := range sides {
			put(t, s, k, strings.Repeat("x", n), 0)
		}
	}
	r := run(t, report.Config{
		Primary:   report.Side{Store: sides[0], Name: "cloudflare_kv"},
		Shadow:    report.Side{Store: sides[1], Name: "mongodb"},
		KeyPolicy: compare.KeyPlain, Secret: []byte("test secret"), Clock: clk,
	})
	checkCounts(t, r, map[string]report.Counts{
		"m": {PrimaryKeys: int64(len(sizes)), ShadowKeys: int64(len(sizes)), Compared: int64(len(sizes)), Kinds: kinds(compare.Match, len(sizes))},
	})
	if p := r.Totals.Parity; p != 100 {
		t.Fatalf("parity %v%%, want 100%%", p)
	}
}

// A value longer than one MongoDB document holds is kept by mongokv in
// chunks, which the JavaScript bot reads as a missing key: the report
// calls it out as its own kind, beside parity, in every format.
func TestTooLargeForTheBotIsCalledOut(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("x", 16<<20)
	put(t, f.primary, "files:big", big, 0)
	put(t, f.shadow, "files:big", big, 0)
	put(t, f.primary, "files:small", "s", 0)
	put(t, f.shadow, "files:small", "s", 0)
	cfg := f.config()
	cfg.Scope.Prefixes = []string{"files:"}
	r := run(t, cfg)
	if r.Totals.TooLargeForBot != 1 || len(r.TooLargeForBot) != 1 || r.TooLargeForBot[0].Key != "files:big" || r.Totals.Parity != 100 {
		t.Fatalf("too large for the bot: %d, records %v, parity %v; want files:big alone at 100%%", r.Totals.TooLargeForBot, r.TooLargeForBot, r.Totals.Parity)
	}
	for _, format := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML, report.FormatJSON} {
		var b strings.Builder
		if err := report.Render(&b, r, format); err != nil {
			t.Fatal(err)
		}
		if out := strings.ToLower(b.String()); !strings.Contains(out, "too large for") && !strings.Contains(out, "too_large_for_bot") {
			t.Errorf("the %s output does not call out the value too large for the bot", format)
		}
	}
}
