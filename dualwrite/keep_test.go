package dualwrite_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// keeper is a Keeper that records what it is given, and what the
// authoritative store held for the key at that moment.
type keeper struct {
	mu     sync.Mutex
	shadow kv.Store
	kept   []dualwrite.Kept
	heldAt []string // the authoritative value when Keep was called
	fail   error
}

func (k *keeper) Keep(ctx context.Context, c dualwrite.Kept) (string, error) {
	held := "<none>"
	if v, err := k.shadow.Get(ctx, c.Key); err == nil {
		held = string(v)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fail != nil {
		return "", k.fail
	}
	c.Displaced.Value = append([]byte(nil), c.Displaced.Value...)
	c.Standing.Value = append([]byte(nil), c.Standing.Value...)
	k.kept = append(k.kept, c)
	k.heldAt = append(k.heldAt, held)
	return "ref-" + c.Key, nil
}

// Every late copy reported as a Conflict has the side that lost kept, with
// the side that stands: a conflict keeps the copy (Workers KV's value, which
// verification will erase), a copy applied while another instance may have
// written keeps what MongoDB held, before the copy overwrites it; a copy
// applied unreported or held keeps nothing. A Keeper that fails leaves the
// outcome as it was and says why in the record.
func TestLateCopiesKeepTheSideThatLost(t *testing.T) {
	ctx := context.Background()
	k := &keeper{}
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Live, Keeper: k})
	k.shadow = p.shadow
	p.clk.Advance(2 * window)
	ingest := func(w dualwrite.TeeWrite) {
		t.Helper()
		w.At = p.clk.Now().Add(-5 * time.Second)
		must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{w}))
		p.flush()
	}
	put := func(s kv.Store, key, value string) {
		t.Helper()
		must(t, s.Put(ctx, key, []byte(value), kv.PutOptions{}))
	}

	// Alone, and past its window: applied unreported, nothing kept.
	ingest(dualwrite.TeeWrite{Key: "wordle:alone", Value: []byte("binding")})

	p.store.SetPeersUntil(p.clk.Now().Add(time.Minute))
	put(p.shadow, "wordle:conflict", "through-b")
	put(p.primary, "wordle:conflict", "through-b")
	ingest(dualwrite.TeeWrite{Key: "wordle:conflict", Value: []byte("binding")})
	put(p.shadow, "wordle:witness", "through-b")
	put(p.primary, "wordle:witness", "binding") // b's copy still on its way
	ingest(dualwrite.TeeWrite{Key: "wordle:witness", Value: []byte("binding")})
	put(p.shadow, "wordle:deleted", "through-b")
	put(p.primary, "wordle:deleted", "through-b")
	ingest(dualwrite.TeeWrite{Key: "wordle:deleted", Delete: true})
	put(p.shadow, "wordle:held", "binding")
	ingest(dualwrite.TeeWrite{Key: "wordle:held", Value: []byte("binding")})

	if v := valueOf(t, p.shadow, "wordle:witness"); v != "binding" {
		t.Fatalf("wordle:witness: MongoDB holds %q, want the copy applied", v)
	}
	want := []struct {
		key, displaced, standing, heldAt string
	}{
		{"wordle:conflict", "binding", "through-b", "through-b"},
		{"wordle:witness", "through-b", "binding", "through-b"},
		{"wordle:deleted", "<none>", "through-b", "through-b"},
	}
	side := func(found bool, v []byte) string {
		if !found {
			return "<none>"
		}
		return string(v)
	}
	if len(k.kept) != len(want) {
		t.Fatalf("kept %d, want %d: %+v", len(k.kept), len(want), k.kept)
	}
	recs := p.sink.conflictRecords()
	// The held copy is reported (the same value on both sides of the
	// flip may be a lost update) but displaces nothing: nothing is kept.
	if len(recs) != len(want)+1 || recs[len(want)].Outcome != dualwrite.LateHeld || recs[len(want)].Kept != "" {
		t.Fatalf("%d records, want %d and a held one: %+v", len(recs), len(want)+1, recs)
	}
	for i, w := range want {
		got := k.kept[i]
		if got.Key != w.key || side(got.Displaced.Found, got.Displaced.Value) != w.displaced || side(got.Standing.Found, got.Standing.Value) != w.standing {
			t.Fatalf("kept %d: %s displaced %q standing %q; want %+v", i, got.Key, side(got.Displaced.Found, got.Displaced.Value), side(got.Standing.Found, got.Standing.Value), w)
		}
		if k.heldAt[i] != w.heldAt {
			t.Fatalf("kept %d: MongoDB held %q when it was kept, want %q (kept before the overwrite)", i, k.heldAt[i], w.heldAt)
		}
		if recs[i].Kept != "ref-"+w.key || recs[i].KeepError != "" {
			t.Fatalf("record %d: kept %q, error %q", i, recs[i].Kept, recs[i].KeepError)
		}
	}

	k.fail = errors.New("ledger down")
	put(p.shadow, "wordle:unkept", "through-b")
	put(p.primary, "wordle:unkept", "binding")
	ingest(dualwrite.TeeWrite{Key: "wordle:unkept", Value: []byte("binding")})
	if v := valueOf(t, p.shadow, "wordle:unkept"); v != "binding" {
		t.Fatalf("wordle:unkept: MongoDB holds %q, want the copy applied as without a Keeper", v)
	}
	recs = p.sink.conflictRecords()
	if c := recs[len(recs)-1]; c.Kept != "" || c.KeepError != "ledger down" || c.Outcome != dualwrite.LateApplied {
		t.Fatalf("record of a failed keep: %+v", c)
	}
}
