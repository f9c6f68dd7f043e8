package dualwrite_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// teeRead is what a tee reports of reading value, with expiry exp, at at.
func teeRead(key, value string, exp, at time.Time) dualwrite.TeeRead {
	return dualwrite.TeeRead{Key: key, Found: true, SHA256: sha256.Sum256([]byte(value)), Length: len(value), Expiration: exp, At: at}
}

// compareReads hands reads to the store and waits for their comparisons.
func (p *pair) compareReads(reads ...dualwrite.TeeRead) int {
	p.t.Helper()
	n, err := p.store.CompareReads(context.Background(), reads)
	must(p.t, err)
	p.flush()
	return n
}

// A read made elsewhere that agrees with the shadow, by digest, length and
// expiry, is a match; so is a miss where the shadow has nothing. The
// store's CompareRate does not sample the tee's reads again.
func TestTeeReadsMatch(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1e-12})
	ctx := context.Background()
	exp := start.Add(time.Hour)
	must(t, p.store.Put(ctx, "wordle:a", []byte(`{"guesses":["crane"]}`), kv.PutOptions{Expiration: exp}))
	must(t, p.store.Put(ctx, "wordle:b", []byte("plain"), kv.PutOptions{}))
	p.settle()
	now := p.clk.Now()
	n := p.compareReads(
		teeRead("wordle:a", `{"guesses":["crane"]}`, exp, now),
		teeRead("wordle:b", "plain", time.Time{}, now),
		dualwrite.TeeRead{Key: "wordle:none", At: now},
	)
	st := p.store.Stats()
	if n != 3 || st.TeeReads != 3 || st.Comparisons[compare.Match] != 3 || len(nonzero(st.Comparisons)) != 1 {
		t.Fatalf("queued %d, tee reads %d, comparisons %v", n, st.TeeReads, nonzero(st.Comparisons))
	}
	if st.Unsettled+st.Dirty != 0 {
		t.Fatalf("matching reads left %d unsettled, %d dirty keys", st.Unsettled, st.Dirty)
	}
}

// MongoDB changed behind the layer: the tee's digest disagrees with the
// shadow's value, which is suspected, not reported; the verification read
// after the window confirms it, reports it to the Sink, and the key is
// repaired from the primary. A read whose expiry alone disagrees is
// suspected too, and cleared by the verification that finds both stores
// equal.
func TestTeeReadFindsADivergence(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:d", []byte("v1"), kv.PutOptions{}))
	must(t, p.store.Put(ctx, "wordle:e", []byte("e"), kv.PutOptions{}))
	p.settle()
	must(t, p.shadow.Store.Put(ctx, "wordle:d", []byte("changed"), kv.PutOptions{}))
	now := p.clk.Now()
	p.compareReads(teeRead("wordle:d", "v1", time.Time{}, now), teeRead("wordle:e", "e", now.Add(time.Hour), now))
	st := p.store.Stats()
	if st.Comparisons[compare.Suspected] != 2 || st.Suspects != 2 || st.Unsettled != 0 || st.Confirmed != 0 || st.Divergences() != 0 || len(p.sink.records()) != 0 {
		t.Fatalf("comparisons %v, suspects %d, unsettled %d, confirmed %d, records %d", nonzero(st.Comparisons), st.Suspects, st.Unsettled, st.Confirmed, len(p.sink.records()))
	}
	p.settle()
	st = p.store.Stats()
	recs := p.sink.records()
	if st.Confirmed != 1 || st.Cleared != 1 || len(recs) != 1 || recs[0].Kind != compare.ValueMismatch {
		t.Fatalf("after the window: confirmed %d, cleared %d, records %v", st.Confirmed, st.Cleared, recs)
	}
	p.repairedOnce("wordle:d", "v1")
}

// repairedOnce waits for the repair that a confirmed divergence of key
// asked for, checks the shadow's copy, and that the key then settles with
// one divergence counted.
func (p *pair) repairedOnce(key, want string) {
	p.t.Helper()
	waitFor(p.t, "the repair", func() bool { return p.store.Stats().Repairs[dualwrite.RepairCopied] == 1 })
	if v, err := p.shadow.Store.Get(context.Background(), key); err != nil || string(v) != want {
		p.t.Fatalf("repaired copy %q, %v", v, err)
	}
	p.settle()
	if st := p.store.Stats(); st.Dirty+st.Unsettled != 0 || st.Divergences() != 1 {
		p.t.Fatalf("after repair: %d dirty, %d unsettled, %d divergences", st.Dirty, st.Unsettled, st.Divergences())
	}
}

// A read made before a write the store has seen since, ingested from the
// tee or its own, is inconclusive, never a divergence, even when the
// shadow already holds the newer value; a read made after the write, sent
// in the same batch as its copy, is compared behind that copy and matches.
func TestTeeReadOlderThanAWriteIsInconclusive(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	t0 := p.clk.Now()
	t1, t2, t3 := t0.Add(-3*time.Second), t0.Add(-2*time.Second), t0.Add(-time.Second)
	must(t, p.primary.Store.Put(ctx, "wordle:t", []byte("v2"), kv.PutOptions{}))
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:t", Value: []byte("v2"), At: t2}}))
	must(t, p.store.Put(ctx, "wordle:own", []byte("new"), kv.PutOptions{}))
	p.compareReads(
		teeRead("wordle:t", "v1", time.Time{}, t1),    // before the ingested write
		teeRead("wordle:own", "old", time.Time{}, t1), // before the store's own write
		teeRead("wordle:t", "v2", time.Time{}, t3),    // after it: its copy is in place
	)
	st := p.store.Stats()
	if st.Comparisons[compare.Inconclusive] != 2 || st.Comparisons[compare.Match] != 1 || st.Comparisons[compare.Suspected] != 0 {
		t.Fatalf("comparisons %v", nonzero(st.Comparisons))
	}
	p.settle()
	if st := p.store.Stats(); st.Divergences() != 0 || st.Confirmed != 0 || st.Unsettled+st.Dirty != 0 {
		t.Fatalf("divergences %d, confirmed %d, %d unsettled, %d dirty", st.Divergences(), st.Confirmed, st.Unsettled, st.Dirty)
	}
}

// Bad reads get typed errors before any is compared; stages that compare
// no tee reads say so.
func TestTeeReadErrors(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	now := p.clk.Now()
	good := teeRead("wordle:g", "v", time.Time{}, now)
	for _, c := range []struct {
		name string
		read dualwrite.TeeRead
		want error
	}{
		{"empty key", dualwrite.TeeRead{At: now}, kv.ErrInvalidKey},
		{"no time", dualwrite.TeeRead{Key: "wordle:g"}, dualwrite.ErrInvalidRead},
		{"digest of nothing", dualwrite.TeeRead{Key: "wordle:g", Length: 3, At: now}, dualwrite.ErrInvalidRead},
		{"expiry of nothing", dualwrite.TeeRead{Key: "wordle:g", Expiration: now, At: now}, dualwrite.ErrInvalidRead},
		{"negative length", dualwrite.TeeRead{Key: "wordle:g", Found: true, Length: -1, At: now}, dualwrite.ErrInvalidRead},
		{"too long", dualwrite.TeeRead{Key: "wordle:g", Found: true, Length: kv.MaxValueSize + 1, At: now}, dualwrite.ErrInvalidRead},
	} {
		n, err := p.store.CompareReads(ctx, []dualwrite.TeeRead{good, c.read})
		wantErr(t, c.name, err, c.want)
		if n != 0 {
			t.Fatalf("%s: %d reads queued", c.name, n)
		}
	}
	p.flush()
	if st := p.store.Stats(); st.TeeReads != 0 {
		t.Fatalf("a refused call compared %d reads", st.TeeReads)
	}

	must(t, p.store.SetStage(ctx, dualwrite.DualWrite))
	if n, err := p.store.CompareReads(ctx, []dualwrite.TeeRead{good}); n != 0 || err != nil {
		t.Fatalf("in dualwrite: %d, %v", n, err)
	}
	must(t, stepTo(ctx, p.store, dualwrite.Live))
	_, err := p.store.CompareReads(ctx, []dualwrite.TeeRead{good})
	wantErr(t, "CompareReads in live", err, dualwrite.ErrIngestStage)

	off := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow})
	if n, err := off.store.CompareReads(ctx, []dualwrite.TeeRead{good}); n != 0 || err != nil {
		t.Fatalf("CompareRate 0: %d, %v", n, err)
	}
	if st := off.store.Stats(); st.TeeReads != 0 {
		t.Fatalf("CompareRate 0 compared %d reads", st.TeeReads)
	}
}

// A tee's read that disagrees about a key never written here makes it a
// suspect, which is neither in the settle set nor in the journal; once the
// same difference holds for a window it is confirmed, and only then does
// the key join the set, dirty, journaled, for repair.
func TestSuspectsStayOutOfTheSetUntilConfirmed(t *testing.T) {
	g := &gateJournal{marks: map[string]dualwrite.Mark{}}
	p := newPair(t, dualwrite.Config{})
	p.store.Close(context.Background())
	p.open(dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, Journal: g})
	ctx := context.Background()
	must(t, p.primary.Store.Put(ctx, "wordle:old", []byte("v"), kv.PutOptions{})) // from before the migration
	p.compareReads(teeRead("wordle:old", "v", time.Time{}, p.clk.Now()))
	if st := p.store.Stats(); st.Suspects != 1 || st.Unsettled+st.Dirty != 0 || st.JournalPending != 0 {
		t.Fatalf("after the read: suspects %d, unsettled %d, dirty %d, journal pending %d", st.Suspects, st.Unsettled, st.Dirty, st.JournalPending)
	}
	if n, commits := g.state(); n != 0 || commits != 0 {
		t.Fatalf("the journal holds %d keys after %d commits", n, commits)
	}
	p.settle()
	if st := p.store.Stats(); st.Confirmed != 1 || st.Suspects != 0 {
		t.Fatalf("after the window: confirmed %d, suspects %d", st.Confirmed, st.Suspects)
	}
	waitFor(t, "the confirmed key in the journal", func() bool { n, _ := g.state(); return n == 1 })
	p.repairedOnce("wordle:old", "v")
}
