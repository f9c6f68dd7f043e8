package dualwrite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// A newer write of a key replaces its copy still waiting in the lane: a
// hot key takes one place in its lane however often it is written, and
// the other store gets its last value.
func TestCoalescing(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, Lanes: 1, LaneDepth: 2, ShadowTimeout: never, RepairInterval: never})
	e.shadow.SetLatency(time.Hour, 0)
	e.put("wordle:first", "x", kv.PutOptions{})
	waitFor(t, "the lane to be busy", func() bool { return e.shadow.Stats().InFlight == 1 })
	for i := range 100 {
		e.put("wordle:hot", fmt.Sprint(i), kv.PutOptions{})
	}
	e.put("wordle:other", "y", kv.PutOptions{})
	st := e.store.Stats()
	if st.Coalesced != 99 || st.Drops[dualwrite.DropLaneFull] != 0 || st.MaxLaneDepth != 2 {
		t.Fatalf("coalesced %d, lane_full %d, depth %d; want 99, 0, 2", st.Coalesced, st.Drops[dualwrite.DropLaneFull], st.MaxLaneDepth)
	}
	e.shadow.SetLatency(0, 0)
	e.clk.Advance(time.Hour)
	e.flush()
	sameContents(t, e.pmem, e.smem)
	if v, _ := e.smem.Get(context.Background(), "wordle:hot"); string(v) != "99" {
		t.Fatalf("hot key's copy = %q, want the last write", v)
	}
}

// A bulk write costs the authoritative store one bulk call whatever its
// size, and every key's copy reaches the other store; bulk deletes too.
func TestBulkWritesOneAuthoritativeCall(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite, LaneDepth: 1 << 12})
	ctx := context.Background()
	entries := make([]kv.Entry, 10_000)
	keys := make([]string, len(entries))
	for i := range entries {
		keys[i] = fmt.Sprintf("wordle:b%05d", i)
		entries[i] = kv.Entry{Key: keys[i], Value: []byte(fmt.Sprint(i)), Expiration: start.Add(time.Hour)}
	}
	must(t, p.store.PutMany(ctx, entries))
	if n := p.primary.requests(); n != 1 || p.primary.bulkPuts.Load() != 1 {
		t.Fatalf("PutMany of 10,000 keys cost the primary %d requests, want 1 bulk put", n)
	}
	p.flush()
	sameContents(t, p.primary.Store, p.shadow.Store)
	if st := p.store.Stats(); st.Unsettled != 10_000 || st.Dirty != 0 {
		t.Fatalf("unsettled %d, dirty %d", st.Unsettled, st.Dirty)
	}
	must(t, p.store.DeleteMany(ctx, keys[:5000]))
	if p.primary.bulkDeletes.Load() != 1 || p.primary.deletes.Load() != 0 {
		t.Fatalf("DeleteMany cost %d bulk and %d single deletes", p.primary.bulkDeletes.Load(), p.primary.deletes.Load())
	}
	p.flush()
	sameContents(t, p.primary.Store, p.shadow.Store)
	wantErr(t, "PutMany with a bad key", p.store.PutMany(ctx, []kv.Entry{{Key: ".."}}), kv.ErrInvalidKey)
}

// Bulk writes and single writes of the same keys, concurrently: the per-key
// order holds (both stores end identical), and two bulks over overlapping
// keys never deadlock.
func TestBulkOrderingProperty(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1, Lanes: 4, LaneDepth: 1 << 14})
	const writers, rounds, keys = 6, 150, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			ctx := context.Background()
			for i := range rounds {
				var err error
				switch rng.IntN(4) {
				case 0:
					batch := make([]kv.Entry, 1+rng.IntN(12))
					for b := range batch {
						batch[b] = kv.Entry{Key: fmt.Sprintf("wordle:k%02d", rng.IntN(keys)), Value: fmt.Appendf(nil, "w%d-%d-%d", w, i, b)}
					}
					err = p.store.PutMany(ctx, batch)
				case 1:
					del := []string{fmt.Sprintf("wordle:k%02d", rng.IntN(keys)), fmt.Sprintf("wordle:k%02d", rng.IntN(keys))}
					err = p.store.DeleteMany(ctx, del)
				case 2:
					err = p.store.Put(ctx, fmt.Sprintf("wordle:k%02d", rng.IntN(keys)), fmt.Appendf(nil, "w%d-%d", w, i), kv.PutOptions{})
				case 3:
					_, err = p.store.GetMany(ctx, []string{fmt.Sprintf("wordle:k%02d", rng.IntN(keys)), fmt.Sprintf("wordle:k%02d", rng.IntN(keys))})
				}
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	p.flush()
	sameContents(t, p.primary.Store, p.shadow.Store)
	st := p.store.Stats()
	if st.Comparisons[compare.Suspected] != 0 || st.Comparisons[compare.Match] == 0 {
		t.Fatalf("comparisons %v: bulk reads must be compared, and never suspect a correct shadow", nonzero(st.Comparisons))
	}
}

// Metadata is written with the value, copied with it through the lanes and
// repairs, compared with it, and refused when a store of the pair keeps
// none.
func TestMetadata(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	md := json.RawMessage(`{"owner":"bot"}`)
	var _ kv.MetadataStore = p.store
	must(t, p.store.PutEntry(ctx, kv.Entry{Key: "wordle:m", Value: []byte("v"), Metadata: md}))
	must(t, p.store.PutMany(ctx, []kv.Entry{{Key: "wordle:n", Value: []byte("v"), Metadata: md}}))
	p.flush()
	for _, k := range []string{"wordle:m", "wordle:n"} {
		e, err := p.shadow.Store.GetEntry(ctx, k)
		if err != nil || string(e.Metadata) != string(md) {
			t.Fatalf("shadow %s: metadata %s, %v", k, e.Metadata, err)
		}
	}
	if e, err := p.store.GetEntry(ctx, "wordle:m"); err != nil || string(e.Metadata) != string(md) {
		t.Fatalf("GetEntry metadata %s, %v", e.Metadata, err)
	}
	// The shadow's metadata differs: comparison suspects, verification
	// confirms it as a metadata mismatch, repair copies the metadata.
	must(t, p.shadow.Store.PutEntry(ctx, kv.Entry{Key: "wordle:m", Value: []byte("v"), Metadata: json.RawMessage(`{"owner":"other"}`)}))
	p.clk.Advance(window)
	if _, err := p.store.Get(ctx, "wordle:m"); err != nil {
		t.Fatal(err)
	}
	p.flush()
	p.settle()
	if st := p.store.Stats(); st.Comparisons[compare.Suspected] != 1 || st.Verifications[compare.MetadataMismatch] != 1 {
		t.Fatalf("comparisons %v, verifications %v", nonzero(st.Comparisons), nonzero(st.Verifications))
	}
	waitFor(t, "the repair of the metadata", func() bool {
		e, err := p.shadow.Store.GetEntry(ctx, "wordle:m")
		return err == nil && string(e.Metadata) == string(md)
	})

	plain := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	err := plain.store.PutEntry(ctx, kv.Entry{Key: "wordle:m", Value: []byte("v"), Metadata: md})
	if !errors.Is(err, kv.ErrMetadataUnsupported) {
		t.Fatalf("PutEntry with metadata over stores without it = %v", err)
	}
	must(t, plain.store.PutEntry(ctx, kv.Entry{Key: "wordle:m", Value: []byte("v")}))
}

// Tee mode: writes the primary already applied are queued to the shadow and
// left unsettled; a write that arrives after a newer one of its key is not
// applied over it; verification checks them against the primary.
func TestIngest(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	// The Worker wrote v1 then v2 through its binding; the copies arrive
	// out of order, and a third key was deleted.
	must(t, p.primary.Store.Put(ctx, "wordle:t", []byte("v2"), kv.PutOptions{}))
	must(t, p.primary.Store.Put(ctx, "wordle:u", []byte("u"), kv.PutOptions{}))
	must(t, p.shadow.Store.Put(ctx, "wordle:gone", []byte("old"), kv.PutOptions{}))
	t1, t2 := start.Add(-2*time.Second), start.Add(-time.Second)
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{
		{Key: "wordle:t", Value: []byte("v2"), At: t2},
		{Key: "wordle:gone", Delete: true, At: t1},
	}))
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:t", Value: []byte("v1"), At: t1}})) // late
	p.flush()
	if v, _ := p.shadow.Store.Get(ctx, "wordle:t"); string(v) != "v2" {
		t.Fatalf("shadow has %q: an older copy was applied over a newer", v)
	}
	if _, err := p.shadow.Store.Get(ctx, "wordle:gone"); !isNotFound(err) {
		t.Fatalf("ingested delete: %v", err)
	}
	if st := p.store.Stats(); st.Unsettled != 2 || st.IngestStale != 1 {
		t.Fatalf("unsettled %d, stale %d", st.Unsettled, st.IngestStale)
	}
	// The ingested keys settle. (wordle:u's copy never arrived and
	// nothing told this process of it: only a full reconciliation finds
	// such a key.)
	p.settle()
	if st := p.store.Stats(); st.Unsettled != 0 || st.Verifications[compare.Match] != 2 {
		t.Fatalf("unsettled %d, verifications %v", st.Unsettled, nonzero(st.Verifications))
	}
	// v1's copy is sent again (a tee's retry) after its key settled: it is
	// still older than v2, and MongoDB never goes back to it, not even
	// until verification would repair it (the flip under traffic saw
	// MongoDB one increment behind a settled counter).
	must(t, p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:t", Value: []byte("v1"), At: t1}}))
	p.flush()
	if v, _ := p.shadow.Store.Get(ctx, "wordle:t"); string(v) != "v2" {
		t.Fatalf("shadow has %q: an older copy was applied over a settled newer write", v)
	}
	if st := p.store.Stats(); st.Unsettled != 1 || st.IngestStale != 2 {
		t.Fatalf("unsettled %d, stale %d", st.Unsettled, st.IngestStale)
	}
	wantErr(t, "Ingest with a bad key", p.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: ""}}), kv.ErrInvalidKey)
	off := newPair(t, dualwrite.Config{Stage: dualwrite.Off})
	wantErr(t, "Ingest in off", off.store.Ingest(ctx, []dualwrite.TeeWrite{{Key: "wordle:t"}}), dualwrite.ErrIngestStage)
}

// GetValue reads the authoritative store's value and expiry by its own
// GetValue, never the metadata, and a sampled GetValue compares only what it
// read: a metadata difference is GetEntry's to find.
func TestGetValueReadsNoMetadata(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	k := "wordle:md"
	exp := start.Add(time.Hour)
	must(t, p.store.PutEntry(ctx, kv.Entry{Key: k, Value: []byte("v"), Expiration: exp, Metadata: json.RawMessage(`{"a":1}`)}))
	p.flush()
	must(t, p.shadow.Store.PutEntry(ctx, kv.Entry{Key: k, Value: []byte("v"), Expiration: exp, Metadata: json.RawMessage(`{"a":2}`)}))
	p.clk.Advance(2 * window)
	gets, values := p.primary.gets.Load(), p.primary.values.Load()
	e, err := p.store.GetValue(ctx, k)
	if err != nil || string(e.Value) != "v" || !e.Expiration.Equal(exp) || e.Metadata != nil {
		t.Fatalf("GetValue = %q exp %v md %s, %v; want the value and expiry, no metadata", e.Value, e.Expiration, e.Metadata, err)
	}
	if p.primary.gets.Load() != gets || p.primary.values.Load() != values+1 {
		t.Fatalf("GetValue cost the primary %d entry reads and %d value reads, want 0 and 1",
			p.primary.gets.Load()-gets, p.primary.values.Load()-values)
	}
	p.flush()
	if st := p.store.Stats(); st.Comparisons[compare.Match] != 1 || st.Comparisons[compare.Suspected] != 0 {
		t.Fatalf("comparisons after GetValue %v, want one match", st.Comparisons)
	}
	if _, err := p.store.GetEntry(ctx, k); err != nil {
		t.Fatal(err)
	}
	p.flush()
	if st := p.store.Stats(); st.Comparisons[compare.Suspected] != 1 {
		t.Fatalf("comparisons after GetEntry %v, want the metadata difference suspected", st.Comparisons)
	}
}
