package dualwrite_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/memory"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/kv"
)

// The real bot's own bookkeeping (its failed-write queue, written beside
// the data as "__retry:mongo-failed:<key>:<id>") and kvshadow's reserved
// keys are excluded: every way a key reaches the Store (a write, a bulk
// write, a tee's copy, a sampled read, a tee's read) leaves them in the
// authoritative store alone, never copied, marked, compared or verified,
// and counts them; the module keys beside them go on as ever.
func TestExcludedPrefixesStayInTheAuthoritativeStore(t *testing.T) {
	const retry = "__retry:mongo-failed:wordle:games:42:1"
	const reserved = kv.ReservedPrefix + "outbox:1"
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: time.Second,
		RepairInterval: never, ExcludePrefixes: []string{"__retry:"}})
	ctx := e.ctx()
	e.put(retry, "queued", kv.PutOptions{})
	e.put(reserved, "kvshadow's", kv.PutOptions{})
	e.put("wordle:games:42", "data", kv.PutOptions{})
	must(t, e.store.PutMany(ctx, []kv.Entry{{Key: "__retry:mongo-failed:wordle:b:2", Value: []byte("queued")}, {Key: "wordle:b", Value: []byte("data")}}))
	must(t, e.store.Ingest(ctx, []dualwrite.TeeWrite{
		{Key: "__retry:mongo-failed:wordle:c:3", Value: []byte("queued"), At: start},
		{Key: "wordle:c", Value: []byte("data"), At: start},
	}))
	if _, err := e.store.Get(ctx, retry); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CompareReads(ctx, []dualwrite.TeeRead{{Key: retry, Found: true, SHA256: sha256.Sum256([]byte("other")), Length: 5, At: start}}); err != nil {
		t.Fatal(err)
	}
	e.flush()

	shadow := keysOf(dump(t, e.smem))
	if want := []string{"wordle:b", "wordle:c", "wordle:games:42"}; !slices.Equal(shadow, want) {
		t.Fatalf("the shadow holds %q, want %q", shadow, want)
	}
	if primary := keysOf(dump(t, e.pmem)); len(primary) != 5 { // wordle:c's primary write was the tee's
		t.Fatalf("the primary holds %q: the excluded writes must reach it", primary)
	}
	listed := append(e.store.UnsettledKeys(), e.store.DirtyKeys()...)
	if slices.ContainsFunc(listed, excludedKey) {
		t.Fatalf("the settle set lists %q", listed)
	}
	st := e.store.Stats()
	if want := (dualwrite.Excluded{Writes: 3, Copies: 1, Reads: 2}); st.Excluded != want {
		t.Fatalf("Stats.Excluded = %+v, want %+v", st.Excluded, want)
	}
	var compared uint64
	for _, n := range st.Comparisons {
		compared += n
	}
	if st.Suspects != 0 || compared != 0 || st.TeeReads != 0 {
		t.Fatalf("an excluded key was compared: %d suspects, %d comparisons, %d tee reads", st.Suspects, compared, st.TeeReads)
	}
	e.clk.Advance(2 * time.Second)
	n, err := e.store.Settle(ctx)
	must(t, err)
	if n != 3 {
		t.Fatalf("Settle verified %d keys, want the 3 module keys alone", n)
	}
	if got := e.store.ExcludedPrefixes(); !slices.Equal(got, []string{kv.ReservedPrefix, "__retry:"}) {
		t.Fatalf("ExcludedPrefixes() = %q", got)
	}
}

func excludedKey(k string) bool {
	return strings.HasPrefix(k, "__retry:") || strings.HasPrefix(k, kv.ReservedPrefix)
}

// A journal written before the prefix was excluded holds its keys: New
// drops them from it, counted, instead of verifying them.
func TestExcludedKeysLeaveTheJournal(t *testing.T) {
	j := &loadedJournal{gateJournal: gateJournal{marks: map[string]dualwrite.Mark{
		"__retry:mongo-failed:wordle:a:1": dualwrite.MarkDirty, "wordle:a": dualwrite.MarkUnsettled}}}
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, RepairInterval: never, Journal: j, ExcludePrefixes: []string{"__retry:"}})
	if got := append(e.store.UnsettledKeys(), e.store.DirtyKeys()...); !slices.Equal(got, []string{"wordle:a"}) {
		t.Fatalf("the settle set holds %q, want wordle:a alone", got)
	}
	waitFor(t, "the journal to drop the excluded key", func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		_, held := j.marks["__retry:mongo-failed:wordle:a:1"]
		return !held
	})
	if st := e.store.Stats(); st.Excluded.Journal != 1 || st.Loaded != 1 {
		t.Fatalf("Excluded %+v, Loaded %d; want 1 dropped from the journal, 1 loaded", st.Excluded, st.Loaded)
	}
}

// loadedJournal is a gateJournal whose Load returns what it holds.
type loadedJournal struct{ gateJournal }

func (l *loadedJournal) Load(_ context.Context) (map[string]dualwrite.Mark, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.marks), false, nil
}

func TestExcludePrefixesRefusesAnEmptyPrefix(t *testing.T) {
	_, err := dualwrite.New(dualwrite.Config{Primary: memory.New(memory.Config{}), Shadow: memory.New(memory.Config{}), ExcludePrefixes: []string{"__retry:", ""}})
	if !errors.Is(err, dualwrite.ErrInvalidConfig) {
		t.Fatalf("New with an empty prefix: %v, want ErrInvalidConfig", err)
	}
}

// The handover's full comparison of the two stores leaves excluded keys
// alone: the bot's queue in Workers KV, which MongoDB never held, neither
// holds the flip back nor is copied to MongoDB by it.
func TestHandoverComparisonLeavesExcludedKeys(t *testing.T) {
	const fence = 10 * time.Second
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.Shadow, FenceInterval: fence, RepairInterval: time.Hour, ExcludePrefixes: []string{"__retry:"}})
	ctx := e.ctx()
	e.put("wordle:both", "same", kv.PutOptions{})
	must(t, e.pmem.Put(ctx, "__retry:mongo-failed:wordle:both:1", []byte("queued before kvshadow"), kv.PutOptions{}))
	e.flush()
	must(t, e.store.SetStage(ctx, dualwrite.Handover))
	e.clk.Advance(fence + 2*window)
	waitFor(t, "the flip", func() bool {
		err := e.store.SetStage(ctx, dualwrite.Live)
		if err != nil && !errors.Is(err, dualwrite.ErrUnsynced) {
			t.Fatal(err)
		}
		if err != nil {
			e.clk.Advance(window)
		}
		return err == nil
	})
	if _, err := e.smem.Get(ctx, "__retry:mongo-failed:wordle:both:1"); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the handover copied the excluded key to MongoDB: %v", err)
	}
	if st := e.store.Stats(); st.Confirmed != 0 {
		t.Fatalf("%d divergences confirmed: the excluded key was compared", st.Confirmed)
	}
}
