package report_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/clock"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/kv"
)

func TestRepairDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Repair = report.Repair{Enabled: true}
	r := run(t, cfg)
	rep := r.Repair
	// missing x2 and value, json, ttl x2 are put; extra is deleted;
	// expired_on_one_side is not divergent.
	if rep == nil || rep.Applied || rep.Puts != 6 || rep.Deletes != 1 || rep.Rechecked != 0 {
		t.Fatalf("repair = %+v", rep)
	}
	if f.shadow.puts.Load()+f.shadow.deletes.Load() != 0 {
		t.Fatal("a dry run wrote")
	}
	if r.Parity != r.Totals.Parity || r.Passed {
		t.Fatalf("a dry run changed the gate: %v", r.Parity)
	}
	checkCounts(t, run(t, f.config()), fixtureWant)
}

func TestRepairApplyThenFullParity(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Repair = report.Repair{Enabled: true, Apply: true}
	r := run(t, cfg)
	rep := r.Repair
	if rep.Puts != 6 || rep.Deletes != 1 || rep.Failed != 0 || rep.Rechecked != 7 || rep.Verified != 7 || rep.Remaining != 0 {
		t.Fatalf("repair = %+v", rep)
	}
	if rep.After[compare.Match] != 7 || rep.ParityAfter != 100 || r.Parity != 100 || !r.Passed {
		t.Fatalf("after repair: %+v, gate %v passed %v", rep, r.Parity, r.Passed)
	}
	// The scan's findings stay what was found.
	checkCounts(t, r, fixtureWant)
	// In bulk: one put and one delete request for the whole batch.
	if f.shadow.puts.Load() != 1 || f.shadow.deletes.Load() != 1 || r.Shadow.Requests.Put != 1 {
		t.Fatalf("puts %d deletes %d", f.shadow.puts.Load(), f.shadow.deletes.Load())
	}
	again := run(t, f.config())
	if again.Totals.Divergent != 0 || again.Parity != 100 {
		t.Fatalf("a new scan after the repair: %+v", again.Totals)
	}
	// Expiries were copied: the TTL keys match within the tolerance.
	e, err := f.shadow.GetEntry(context.Background(), "loldle-emoji:d")
	if err != nil || !e.Expiration.Equal(epoch.Add(time.Hour)) {
		t.Fatalf("copied expiry = %v, %v", e.Expiration, err)
	}
}

// The role is read as ParseRole reads it, whatever its case.
func TestRepairFromTheShadow(t *testing.T) {
	for _, role := range []report.Role{report.Shadow, "Shadow"} {
		f := newFixture(t)
		cfg := f.config()
		cfg.Repair = report.Repair{Enabled: true, Apply: true, Authoritative: role}
		r := run(t, cfg)
		// missing_in_shadow x2 are deleted from the primary, extra is put there,
		// value, json and ttl x2 are put there.
		if rep := r.Repair; rep.Puts != 5 || rep.Deletes != 2 || rep.Verified != 7 {
			t.Fatalf("repair = %+v", rep)
		}
		if _, err := f.primary.Get(context.Background(), "wordle:c"); err == nil {
			t.Fatal("a key absent from the authoritative shadow survived in the primary")
		}
		if v, _ := f.primary.Get(context.Background(), "wordle:d"); string(v) != "SECRET-VALUE-3" {
			t.Fatalf("primary value = %q", v)
		}
		if again := run(t, f.config()); again.Totals.Divergent != 0 {
			t.Fatalf("a new scan: %+v", again.Totals)
		}
	}
}

// lagging accepts bulk writes that its readers do not see yet: Workers
// KV's eventual consistency, as a re-check right after a repair meets it.
type lagging struct{ *counted }

func (l lagging) PutMany(context.Context, []kv.Entry) error { return nil }

func TestRecheckIntoThePrimaryIsPending(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.Primary.Store = lagging{f.primary}
	cfg.Repair = report.Repair{Enabled: true, Apply: true, Authoritative: report.Shadow}
	r := run(t, cfg)
	if rep := r.Repair; rep.Pending != 5 || rep.Verified != 2 || rep.After[compare.Pending] != 5 || r.Passed {
		t.Fatalf("repair = %+v", rep)
	}
}

func TestBackfillIntoAnEmptyShadow(t *testing.T) {
	clk := clock.NewFake(epoch)
	f := &fixture{clk: clk, primary: newCounted(clk), shadow: newCounted(clk)}
	for i, m := range []string{"wordle", "trading", "loldle-emoji"} {
		for j := range 150 {
			ttl := time.Duration(0)
			if j%3 == 0 {
				ttl = time.Duration(i+1) * time.Hour
			}
			put(t, f.primary, m+":"+string(rune('a'+j%26))+time.Duration(j).String(), "v", ttl)
		}
	}
	put(t, f.primary, "trading:soon", "v", time.Minute) // cannot be copied with its expiry
	clk.Advance(time.Second)
	cfg := f.config()
	cfg.Repair = report.Repair{Enabled: true, Apply: true}
	cfg.BatchSize = 40
	r := run(t, cfg)
	if r.Totals.ShadowKeys != 0 || r.Totals.Kinds[compare.MissingInShadow] != 451 {
		t.Fatalf("totals = %+v", r.Totals)
	}
	if rep := r.Repair; rep.Puts != 450 || rep.Expiring != 1 || rep.Deletes != 0 || rep.Verified != 450 {
		t.Fatalf("repair = %+v", rep)
	}
	if r.Passed {
		t.Fatal("a key left to expire still differs; the gate must not pass")
	}
	// 451 keys in batches of 40: 12 bulk writes, not 450 puts.
	if got := f.shadow.puts.Load(); got != 12 {
		t.Fatalf("bulk writes = %d, want 12", got)
	}
	clk.Advance(time.Minute)
	again := run(t, f.config())
	if again.Totals.Divergent != 0 || again.Totals.Compared != 450 {
		t.Fatalf("after backfill: %+v", again.Totals)
	}
}

func TestRepairLetsAnExpiringKeyLapse(t *testing.T) {
	f := newFixture(t)
	put(t, f.primary, "wordle:soon", "new", 65*time.Second)
	put(t, f.shadow, "wordle:soon", "old", 0)
	cfg := f.config()
	cfg.Scope.Prefixes = []string{"wordle:soon"}
	cfg.Repair = report.Repair{Enabled: true, Apply: true}
	r := run(t, cfg)
	if rep := r.Repair; rep.Expiring != 1 || rep.Deletes != 1 || rep.Puts != 0 || rep.Rechecked != 0 || r.Passed {
		t.Fatalf("repair = %+v, passed %v", rep, r.Passed)
	}
	if _, err := f.shadow.Get(context.Background(), "wordle:soon"); err == nil {
		t.Fatal("the stale copy outlives the authoritative one")
	}
}

// Metadata is part of a key's state: a difference in it alone is found, and
// a repair copies it with the value rather than erasing it.
func TestRepairCopiesMetadata(t *testing.T) {
	clk := clock.NewFake(epoch)
	p, s := newCounted(clk), newCounted(clk)
	ctx := context.Background()
	md := json.RawMessage(`{"by":"wrangler"}`)
	for _, e := range []kv.Entry{{Key: "wordle:md", Value: []byte("v"), Metadata: md}, {Key: "wordle:same", Value: []byte("w"), Metadata: md}} {
		if err := p.PutEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, "wordle:md", "v", 0) // same value, no metadata
	if err := s.PutEntry(ctx, kv.Entry{Key: "wordle:same", Value: []byte("w"), Metadata: json.RawMessage(`{ "by": "wrangler" }`)}); err != nil {
		t.Fatal(err)
	}
	cfg := report.Config{Primary: report.Side{Store: p, Name: "p"}, Shadow: report.Side{Store: s, Name: "s"}, Clock: clk, MinParity: 100,
		Repair: report.Repair{Enabled: true, Apply: true}}
	r := run(t, cfg)
	if got := r.Totals.Kinds; got[compare.MetadataMismatch] != 1 || got[compare.Match] != 1 {
		t.Fatalf("kinds = %v, want one metadata_mismatch and one match", got)
	}
	if r.Repair.Puts != 1 || r.Repair.After[compare.Match] != 1 || r.Repair.ParityAfter != 100 {
		t.Fatalf("repair = %+v", r.Repair)
	}
	e, err := s.GetEntry(ctx, "wordle:md")
	if err != nil || string(e.Metadata) != string(md) {
		t.Fatalf("shadow after repair = %q, %v; want the primary's metadata", e.Metadata, err)
	}
}
