package dualwrite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/budget"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/journal"
	"github.com/kvshadow/kvshadow/kv"
)

// Every written key is unsettled until a verification after the window
// reads both stores, in bulk, and finds them equal: 1,000 keys cost each
// store 10 bulk reads.
func TestVerificationSettlesInBulk(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	for i := range 1000 {
		must(t, p.store.Put(ctx, fmt.Sprintf("wordle:k%04d", i), []byte("v"), kv.PutOptions{}))
	}
	p.flush()
	if st := p.store.Stats(); st.Unsettled != 1000 || st.Dirty != 0 {
		t.Fatalf("unsettled %d, dirty %d, want 1000 and 0", st.Unsettled, st.Dirty)
	}
	p.clk.Advance(window - time.Second)
	if n, err := p.store.Settle(ctx); err != nil || n != 0 {
		t.Fatalf("Settle inside the window = %d, %v", n, err)
	}
	before := p.primary.requests()
	if n := p.settle(); n != 1000 {
		t.Fatalf("Settle verified %d keys, want 1000", n)
	}
	st := p.store.Stats()
	if st.Unsettled != 0 || st.Verifications[compare.Match] != 1000 || len(p.store.UnsettledKeys()) != 0 {
		t.Fatalf("unsettled %d, verifications %v", st.Unsettled, nonzero(st.Verifications))
	}
	if got := p.primary.requests() - before; got != 10 || p.primary.bulkGets.Load() != 10 || p.shadow.bulkGets.Load() != 10 {
		t.Fatalf("verification cost the primary %d requests (%d bulk gets), the shadow %d bulk gets; want 10 each",
			got, p.primary.bulkGets.Load(), p.shadow.bulkGets.Load())
	}
}

// A copy that the shadow lost after acknowledging it (or that a write
// around the layer changed) is suspected at the first verification,
// confirmed at the second, reported, repaired through its lane, and the key
// then settles.
func TestVerificationFindsAndRepairsADivergence(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:lost", []byte("v"), kv.PutOptions{}))
	must(t, p.store.Put(ctx, "wordle:kept", []byte("v"), kv.PutOptions{}))
	p.flush()
	must(t, p.shadow.Store.Delete(ctx, "wordle:lost"))

	p.settle()
	st := p.store.Stats()
	if st.Verifications[compare.Suspected] != 1 || st.Confirmed != 0 || len(p.sink.records()) != 0 || st.Unsettled != 1 {
		t.Fatalf("after one read: verifications %v, confirmed %d, unsettled %d", nonzero(st.Verifications), st.Confirmed, st.Unsettled)
	}
	p.settle()
	st = p.store.Stats()
	recs := p.sink.records()
	if st.Confirmed != 1 || st.Verifications[compare.MissingInShadow] != 1 || len(recs) != 1 || recs[0].Kind != compare.MissingInShadow {
		t.Fatalf("after two reads: verifications %v, confirmed %d, records %v", nonzero(st.Verifications), st.Confirmed, recs)
	}
	// The confirmation asks for a repair pass at once.
	p.repairedOnce("wordle:lost", "v")
}

// A sampled comparison that disagrees because another process's copy is
// still on its way is only suspected, among the suspects rather than the
// settle set (the key was never written here); the verification after the
// window, once that copy has landed, clears it: nothing is reported.
func TestSuspicionClearedByVerification(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1})
	ctx := context.Background()
	// Another instance wrote v2 to the primary; its copy is in flight.
	must(t, p.primary.Store.Put(ctx, "wordle:k", []byte("v2"), kv.PutOptions{}))
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("v1"), kv.PutOptions{}))
	if _, err := p.store.Get(ctx, "wordle:k"); err != nil {
		t.Fatal(err)
	}
	p.flush()
	if st := p.store.Stats(); st.Comparisons[compare.Suspected] != 1 || st.Suspects != 1 || st.Unsettled != 0 || st.Divergences() != 0 {
		t.Fatalf("comparisons %v, suspects %d, unsettled %d", nonzero(st.Comparisons), st.Suspects, st.Unsettled)
	}
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("v2"), kv.PutOptions{})) // the copy lands
	p.settle()
	st := p.store.Stats()
	if st.Cleared != 1 || st.Confirmed != 0 || st.Divergences() != 0 || len(p.sink.records()) != 0 || st.Unsettled+st.Suspects != 0 {
		t.Fatalf("cleared %d, confirmed %d, records %v, unsettled %d, suspects %d", st.Cleared, st.Confirmed, p.sink.records(), st.Unsettled, st.Suspects)
	}
}

// A key is not verified while its own copy is on its way, however slow
// the other store: a copy that takes longer than the window is no
// divergence.
func TestNoVerificationWhileCopyInFlight(t *testing.T) {
	e := newEnv(t, dualwrite.Config{Stage: dualwrite.DualWrite, ShadowTimeout: never, RepairInterval: never})
	e.shadow.SetLatency(10*time.Minute, 0)
	e.put("wordle:slow", "v", kv.PutOptions{})
	waitFor(t, "the copy to start", func() bool { return e.shadow.Stats().InFlight == 1 })
	e.clk.Advance(5 * time.Minute) // past the window, copy still running
	if n, err := e.store.Settle(e.ctx()); err != nil || n != 0 {
		t.Fatalf("Settle with the copy in flight = %d, %v", n, err)
	}
	e.drive(time.Minute)
	e.shadow.SetLatency(0, 0) // verification reads the shadow too
	e.clk.Advance(window)
	if n, err := e.store.Settle(e.ctx()); err != nil || n != 1 {
		t.Fatalf("Settle after the copy = %d, %v", n, err)
	}
	if st := e.store.Stats(); st.Verifications[compare.Match] != 1 || st.Unsettled != 0 {
		t.Fatalf("verifications %v, unsettled %d", nonzero(st.Verifications), st.Unsettled)
	}
}

// Verification draws on the primary's request budget: with the budget
// spent it waits, and a caller's own request does not.
func TestVerificationWaitsForBudget(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.DualWrite})
	lim := budget.New(budget.Budget{Requests: 1, Per: time.Hour}, p.clk)
	p.store.Close(context.Background())
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, PrimaryBudget: lim, VerifyBatch: 1})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:a", []byte("v"), kv.PutOptions{}))
	must(t, p.store.Put(ctx, "wordle:b", []byte("v"), kv.PutOptions{}))
	p.flush()
	p.clk.Advance(window)
	done := make(chan int, 1)
	go func() {
		n, _ := p.store.Settle(ctx)
		done <- n
	}()
	waitFor(t, "the first key to settle", func() bool { return p.store.Stats().Unsettled == 1 })
	must(t, p.store.Put(ctx, "wordle:c", []byte("v"), kv.PutOptions{})) // the caller does not wait
	select {
	case n := <-done:
		t.Fatalf("Settle returned %d within a spent budget", n)
	default:
	}
	for {
		select {
		case n := <-done:
			if n != 2 {
				t.Fatalf("Settle verified %d keys, want 2", n)
			}
			return
		default:
			p.clk.Advance(time.Minute)
		}
	}
}

// Close leaves exactly the keys not settled in the journal; a restart on
// it loads them, verifies them after the window, and empties it.
func TestJournalSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settle.db")
	j, err := journal.Open(path, journal.Options{})
	must(t, err)
	t.Cleanup(func() { j.Close() }) // after the Stores' Close

	p := newPair(t, dualwrite.Config{})
	p.store.Close(context.Background())
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j})
	ctx := context.Background()
	for i := range 20 {
		must(t, p.store.Put(ctx, key(i), []byte("v"), kv.PutOptions{}))
	}
	p.settle() // the first 20 settle
	for i := 20; i < 30; i++ {
		must(t, p.store.Put(ctx, key(i), []byte("v"), kv.PutOptions{}))
	}
	p.flush()
	want := p.store.UnsettledKeys()
	must(t, p.store.Close(ctx))
	marks, _, err := j.Load(ctx)
	must(t, err)
	if len(marks) != 10 || len(want) != 10 {
		t.Fatalf("journal holds %d keys, the store had %d unsettled; want 10", len(marks), len(want))
	}
	for _, k := range want {
		if marks[k] != dualwrite.MarkUnsettled {
			t.Fatalf("journal lacks %s: %v", k, marks)
		}
	}

	// A copy lost with the process: the restart must find it.
	must(t, p.shadow.Store.Delete(ctx, key(25)))
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j})
	if st := p.store.Stats(); st.Loaded != 10 || st.Unsettled != 10 || !st.Journal {
		t.Fatalf("after restart: loaded %d, unsettled %d", st.Loaded, st.Unsettled)
	}
	for range 4 {
		p.settle()
		p.store.RepairDirty()
		p.flush()
	}
	waitFor(t, "the journal to be empty", func() bool {
		n, err := j.Len()
		return err == nil && n == 0
	})
	sameContents(t, p.primary.Store, p.shadow.Store)
	// The journal named the key: its difference is a copy that died with
	// the process, repaired as known, never reported as a divergence.
	if st := p.store.Stats(); st.Confirmed != 0 || st.Recovered != 1 || st.Divergences() != 0 || st.Dirty+st.Unsettled != 0 || st.JournalCommits == 0 {
		t.Fatalf("confirmed %d, recovered %d, divergences %d, dirty %d, unsettled %d, commits %d",
			st.Confirmed, st.Recovered, st.Divergences(), st.Dirty, st.Unsettled, st.JournalCommits)
	}
}

// gateJournal is a Journal in memory whose commits can be held or failed.
type gateJournal struct {
	mu      sync.Mutex
	marks   map[string]dualwrite.Mark
	commits int
	fail    error
	hold    chan struct{} // when set, Commit waits for it to close
}

func (g *gateJournal) Load(context.Context) (map[string]dualwrite.Mark, bool, error) {
	return map[string]dualwrite.Mark{}, false, nil
}

func (g *gateJournal) Commit(_ context.Context, changes map[string]dualwrite.Mark, _ bool) error {
	g.mu.Lock()
	hold, fail := g.hold, g.fail
	g.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if fail != nil {
		return fail
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.commits++
	for k, m := range changes {
		if m == dualwrite.MarkSettled {
			delete(g.marks, k)
		} else {
			g.marks[k] = m
		}
	}
	return nil
}

func (g *gateJournal) state() (int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.marks), g.commits
}

// The caller never waits on the journal: with a commit held, writes go on,
// their marks group into the next commit, and a failing journal keeps its
// changes until it recovers.
func TestJournalGroupCommitOffTheCallersPath(t *testing.T) {
	g := &gateJournal{marks: map[string]dualwrite.Mark{}, hold: make(chan struct{})}
	p := newPair(t, dualwrite.Config{})
	p.store.Close(context.Background())
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, Journal: g})
	ctx := context.Background()
	for i := range 100 {
		must(t, p.store.Put(ctx, key(i), []byte("v"), kv.PutOptions{})) // returns with the commit held
	}
	g.mu.Lock()
	close(g.hold)
	g.hold = nil
	g.mu.Unlock()
	waitFor(t, "the marks to be committed", func() bool { n, _ := g.state(); return n == 100 })
	if _, commits := g.state(); commits > 3 {
		t.Fatalf("%d commits for 100 writes: the marks were not grouped", commits)
	}

	g.mu.Lock()
	g.fail = errors.New("disk full")
	g.mu.Unlock()
	must(t, p.store.Put(ctx, "wordle:later", []byte("v"), kv.PutOptions{}))
	waitFor(t, "the failure to show", func() bool { st := p.store.Stats(); return st.JournalErrors > 0 && !st.JournalOK })
	if st := p.store.Stats(); st.JournalPending != 1 {
		t.Fatalf("pending %d after a failed commit, want the change kept", st.JournalPending)
	}
	g.mu.Lock()
	g.fail = nil
	g.mu.Unlock()
	waitFor(t, "the retried commit", func() bool {
		p.clk.Advance(time.Second) // the committer retries on the Store's clock
		n, _ := g.state()
		return n == 101
	})
	if st := p.store.Stats(); !st.JournalOK || st.JournalPending != 0 {
		t.Fatalf("after recovery: ok %v, pending %d", st.JournalOK, st.JournalPending)
	}
}

// Sampled reads check their key's mark while verification settles keys and
// reuses their entries: under the race detector this finds a mark read
// outside the set's lock.
func TestComparisonsBesideSettling(t *testing.T) {
	p := newPair(t, dualwrite.Config{Stage: dualwrite.Shadow, CompareRate: 1, ConsistencyWindow: -1})
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := fmt.Sprintf("wordle:w%d-%d", w, i%8)
				must(t, p.store.Put(ctx, k, []byte(fmt.Sprint(i)), kv.PutOptions{}))
				if _, err := p.store.Get(ctx, k); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			if _, err := p.store.Settle(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
}

// A key the journal names is repaired as known after a restart; a
// difference that outlives its repair (the shadow changed around the layer
// again) is judged as any other, and confirmed.
func TestRecoveredKeyStillDifferentAfterRepairIsConfirmed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settle.db")
	j, err := journal.Open(path, journal.Options{})
	must(t, err)
	t.Cleanup(func() { j.Close() })
	p := newPair(t, dualwrite.Config{})
	p.store.Close(context.Background())
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j})
	ctx := context.Background()
	must(t, p.store.Put(ctx, "wordle:k", []byte("v"), kv.PutOptions{}))
	p.flush()
	must(t, p.store.Close(ctx))
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("around"), kv.PutOptions{}))
	p.open(dualwrite.Config{Stage: dualwrite.DualWrite, Journal: j})
	p.settle()
	if st := p.store.Stats(); st.Recovered != 1 || st.Dirty != 1 || st.Confirmed != 0 {
		t.Fatalf("after the first verification: recovered %d, dirty %d, confirmed %d", st.Recovered, st.Dirty, st.Confirmed)
	}
	for i := 0; valueOf(t, p.shadow.Store, "wordle:k") != "v"; i++ {
		if i == 3 {
			t.Fatal("the recovered key was not repaired")
		}
		p.clk.Advance(window)
		p.store.RepairDirty()
		p.flush()
	}
	// Repaired, not verified yet: the shadow changes around the layer again.
	must(t, p.shadow.Store.Put(ctx, "wordle:k", []byte("around again"), kv.PutOptions{}))
	p.settle()
	p.settle()
	if st := p.store.Stats(); st.Confirmed != 1 || st.Recovered != 1 || len(p.sink.records()) != 1 {
		t.Fatalf("a difference after the repair: confirmed %d, recovered %d, records %d", st.Confirmed, st.Recovered, len(p.sink.records()))
	}
}
